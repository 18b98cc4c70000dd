#pragma once
// Kernel launches the host makes, and kernels the GPU runs, over a few steps: LibTorch's Kineto
// profiler with its CUDA activities (CUPTI's records of runtime and driver calls and of kernels,
// those a CUDA graph replays included). A captured step is one graph launch that runs hundreds of
// kernels; an eager one launches each of them. Private to the profile area.

#include <cstdint>
#include <optional>
#include <string>

namespace gputrain::profile {

/// What a CUDA runtime or driver call's name says it launched.
enum class LaunchCall { none, kernel, graph };
LaunchCall launch_call_of(const std::string& api_name);

struct LaunchCounts {
  std::int64_t kernel_launches = 0;  // cudaLaunchKernel, cuLaunchKernel and their variants
  std::int64_t graph_launches = 0;   // cudaGraphLaunch, cuGraphLaunch
  std::int64_t gpu_kernels = 0;      // kernels the GPU ran, launched one by one or from a graph
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
