#include "gputrain/profile/gpu_span_timer.hpp"

#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include <deque>

namespace gputrain::profile {

struct GpuSpanTimer::Events {
  c10::Device device;
  // A deque: events cannot be copied, and growing it never moves the ones already recorded.
  std::deque<c10::cuda::CUDAEvent> starts, ends;
  c10::cuda::CUDAEvent& next(std::deque<c10::cuda::CUDAEvent>& events, std::int64_t i) {
    if (static_cast<std::int64_t>(events.size()) <= i) events.emplace_back(cudaEventDefault);  // timing enabled
    return events[static_cast<std::size_t>(i)];
  }
};

GpuSpanTimer::GpuSpanTimer(c10::Device device) {
  if (device.is_cuda()) events_ = std::make_unique<Events>(Events{device, {}, {}});
}

GpuSpanTimer::~GpuSpanTimer() = default;

void GpuSpanTimer::begin() {
  if (!events_) return;
  events_->next(events_->starts, spans_).record(c10::cuda::getCurrentCUDAStream(events_->device.index()));
  open_ = true;
}

void GpuSpanTimer::end() {
  if (!events_ || !open_) return;
  events_->next(events_->ends, spans_).record(c10::cuda::getCurrentCUDAStream(events_->device.index()));
  open_ = false;
  ++spans_;
}

double GpuSpanTimer::seconds() const {
  if (!events_ || spans_ == 0) return 0;
  const auto last = static_cast<std::size_t>(spans_ - 1);
  events_->ends[last].synchronize();  // the stream runs in order: every earlier event is complete too
  double milliseconds = 0;
  for (std::size_t i = 0; i <= last; ++i) milliseconds += events_->starts[i].elapsed_time(events_->ends[i]);
  return milliseconds / 1e3;
}

}  // namespace gputrain::profile
