#pragma once
// Kernel launches the host makes, and kernels the GPU runs, over a few steps: LibTorch's Kineto
// profiler with its CUDA activities (CUPTI's records of runtime and driver calls and of kernels,
// those a CUDA graph replays included). A captured step is one graph launch that runs hundreds of
// kernels; an eager one launches each of them. The kernels' and copies' times also say how busy
// the GPU was. Private to the profile area.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::profile {

/// What a CUDA runtime or driver call's name says it launched.
enum class LaunchCall { none, kernel, graph };
LaunchCall launch_call_of(const std::string& api_name);

/// A kernel's, copy's or memset's run on the GPU, on the profiler's clock (nanoseconds).
struct DeviceSpan {
  std::uint64_t start_ns = 0, end_ns = 0;
};

/// The share of the time from the first span's start to the last one's end during which the GPU
/// ran something (spans on several streams that overlap count once): how busy the steps kept it,
/// precisely, where NVML samples. nullopt without spans or without time between them.
std::optional<double> busy_share(std::vector<DeviceSpan> spans);

struct LaunchCounts {
  std::int64_t kernel_launches = 0;  // cudaLaunchKernel, cuLaunchKernel and their variants
  std::int64_t graph_launches = 0;   // cudaGraphLaunch, cuGraphLaunch
  std::int64_t gpu_kernels = 0;      // kernels the GPU ran, launched one by one or from a graph
  std::optional<double> gpu_busy;    // busy_share of the kernels, copies and memsets
};

class LaunchCounter {
 public:
  /// Starts the profiler with CUDA activities only (no CPU operators: the least it can slow).
  LaunchCounter();
  /// Stops it, if stop() has not.
  ~LaunchCounter();
  LaunchCounter(const LaunchCounter&) = delete;
  LaunchCounter& operator=(const LaunchCounter&) = delete;

  /// Stops the profiler and counts its records; nullopt, with why(), when it could not start or
  /// recorded no kernel at all (CUPTI missing or refused, as in some containers).
  std::optional<LaunchCounts> stop();
  const std::string& why() const { return why_; }

 private:
  bool on_ = false;
  std::string why_;
};

}  // namespace gputrain::profile
