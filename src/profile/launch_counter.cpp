#include "profile/launch_counter.hpp"

#include <kineto/ActivityType.h>  // libkineto::ActivityType, what KinetoEvent::activityType() holds
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <set>

namespace gputrain::profile {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

const std::set<ActivityType> kCudaOnly{ActivityType::CUDA};

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

LaunchCall launch_call_of(const std::string& api_name) {
  // CUPTI's names may carry a suffix: cudaLaunchKernel_ptsz (per-thread stream), _v7000 (version).
  const auto name = api_name.substr(0, api_name.find('_'));
  if (name == "cudaGraphLaunch" || name == "cuGraphLaunch") return LaunchCall::graph;
  if ((starts_with(name, "cudaLaunch") || starts_with(name, "cuLaunch")) && name.find("HostFunc") == std::string::npos)
    return LaunchCall::kernel;
  return LaunchCall::none;
}

std::optional<double> busy_share(std::vector<DeviceSpan> spans) {
  if (spans.empty()) return std::nullopt;
  std::sort(spans.begin(), spans.end(), [](const DeviceSpan& a, const DeviceSpan& b) { return a.start_ns < b.start_ns; });
  std::uint64_t busy = 0, run_start = spans.front().start_ns, run_end = run_start, last_end = run_start;
  for (const auto& span : spans) {
    const auto end = std::max(span.start_ns, span.end_ns);
    last_end = std::max(last_end, end);
    if (span.start_ns > run_end) {  // a gap: the run of overlapping spans before it is done
      busy += run_end - run_start;
      run_start = span.start_ns;
    }
    run_end = std::max(run_end, end);
  }
  busy += run_end - run_start;
  const auto window = last_end - spans.front().start_ns;
  if (window == 0) return std::nullopt;
  return static_cast<double>(busy) / static_cast<double>(window);
}

LaunchCounter::LaunchCounter() {
  try {
    const ProfilerConfig config(ProfilerState::KINETO);
    profiler::prepareProfiler(config, kCudaOnly);
    profiler::enableProfiler(config, kCudaOnly);
    on_ = true;
  } catch (const std::exception& e) {
    why_ = std::string("LibTorch's profiler did not start: ") + e.what();
  }
}

LaunchCounter::~LaunchCounter() {
  if (!on_) return;
  try {
    profiler::disableProfiler();
  } catch (...) {  // a destructor that runs while an error unwinds says nothing more
  }
}

std::optional<LaunchCounts> LaunchCounter::stop() {
  if (!on_) return std::nullopt;
  on_ = false;
  LaunchCounts counts;
  std::unique_ptr<profiler::ProfilerResult> result;  // owns the events: held for the loop
  try {
    result = profiler::disableProfiler();
  } catch (const std::exception& e) {  // the counts are one line of the report, which goes on without them
    why_ = std::string("LibTorch's profiler did not stop: ") + e.what();
    return std::nullopt;
  }
  std::vector<DeviceSpan> on_gpu;
  for (const auto& event : result->events()) {
    switch (static_cast<libkineto::ActivityType>(event.activityType())) {
      case libkineto::ActivityType::CONCURRENT_KERNEL:
        ++counts.gpu_kernels;
        on_gpu.push_back({event.startNs(), event.endNs()});
        break;
      case libkineto::ActivityType::GPU_MEMCPY:
      case libkineto::ActivityType::GPU_MEMSET:
        on_gpu.push_back({event.startNs(), event.endNs()});
        break;
      case libkineto::ActivityType::CUDA_RUNTIME:
      case libkineto::ActivityType::CUDA_DRIVER: {
        const auto call = launch_call_of(event.name());
        counts.kernel_launches += call == LaunchCall::kernel;
        counts.graph_launches += call == LaunchCall::graph;
        break;
      }
      default:
        break;
    }
  }
  if (counts.gpu_kernels == 0) {
    why_ = "the profiler recorded no GPU kernel (CUPTI, which it reads them from, may be missing or not allowed here)";
    return std::nullopt;
  }
  counts.gpu_busy = busy_share(std::move(on_gpu));
  return counts;
}

}  // namespace gputrain::profile
