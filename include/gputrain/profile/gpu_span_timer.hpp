#pragma once
// How long the GPU itself spends between two points of the host's program: CUDA events recorded
// on the device's current stream at each end of a span, summed. `profile --step` times the data
// feed with it. The host's own clock cannot tell a GPU waiting for its data from a host that
// merely blocked in a launch because the GPU's queue was full; the GPU's clock can: a span holds
// the feed's kernels (the cache's gather) or the wait for the batch's copy, plus any time the GPU
// sat idle because the host was still busy fetching the batch.

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>

namespace gputrain::profile {

class GpuSpanTimer {
 public:
  /// Times spans on `device`; on the CPU every call is a no-op and seconds() is 0.
  explicit GpuSpanTimer(c10::Device device);
  ~GpuSpanTimer();
  GpuSpanTimer(const GpuSpanTimer&) = delete;
  GpuSpanTimer& operator=(const GpuSpanTimer&) = delete;

  /// Marks a span's start; a start without an end before the next start is dropped.
  void begin();
  /// Marks the end of the span begun last.
  void end();
  /// Spans begun and ended so far.
  std::int64_t spans() const { return spans_; }
  /// GPU time of those spans, in seconds; waits for the last one to complete.
  double seconds() const;

 private:
  struct Events;
  std::unique_ptr<Events> events_;  // null on the CPU
  std::int64_t spans_ = 0;
  bool open_ = false;
};

}  // namespace gputrain::profile
