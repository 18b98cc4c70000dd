#pragma once
// `gputrain profile --step`: real training steps of a config, split into data wait, copy and
// compute, with the GPU's utilisation and a verdict: "is my GPU starving?"

#include <cstdint>
#include <optional>
#include <string>

#include "gputrain/profile/step_verdict.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/run_setup.hpp"

namespace gputrain::profile {

/// What the timed steps measured; seconds are per step, averaged over the timed windows.
struct StepProfile {
  std::string device, model, data_cache;
  std::int64_t warmup_steps = 0, steps = 0, batch_size = 0;
  double step_seconds = 0, data_wait_seconds = 0, compute_seconds = 0;
  double h2d_copy_seconds_estimate = 0;  ///< the batch's bytes at the pinned-copy ceiling (GPU, no VRAM cache)
  std::uint64_t batch_bytes = 0;
  double data_stall_percent = 0, samples_per_second = 0, pinned_copy_gbps = 0;
  std::optional<double> gpu_data_wait_seconds, gpu_data_stall_percent;  ///< the GPU's own clock (GPU only)
  std::optional<double> gpu_utilization_percent;                        ///< NVML over the timed steps (GPU only)
  double utilization_seconds = 0;                                       ///< how long NVML was sampled
  std::string utilization_unavailable;                                  ///< why there is no utilisation on a GPU ("" otherwise)
  /// The host's own time in a step (from its batch to its end, step lines left out): on a GPU,
  /// launching the work; near step_seconds when the host keeps the GPU waiting.
  double host_seconds_per_step = 0;
  /// ATen operators the host dispatched per step (nested ones included), counted over a few steps
  /// after the timed ones: a replayed CUDA graph needs a handful, an eager step hundreds.
  double host_ops_per_step = 0;
  /// Over the same steps, on a CUDA GPU (CUPTI's records, read by LibTorch's Kineto profiler): the
  /// host's kernel launches and graph launches per step, and the kernels the GPU ran per step.
  /// Empty elsewhere, or with `launches_unavailable` saying why.
  std::optional<double> kernel_launches_per_step, graph_launches_per_step, gpu_kernels_per_step;
  /// Over the same steps: the share of the time from their first kernel's start to their last
  /// one's end during which a kernel, copy or memset ran (percent; CUPTI's times, not sampled).
  std::optional<double> gpu_busy_percent;
  std::string launches_unavailable;
  std::string cuda_graphs;  ///< as the run resolved train.cuda_graphs: "on" or "off (why)"
  StepVerdict verdict = StepVerdict::compute_bound;
};

/// Trains `steps` timed steps (after a warm-up window of up to 10) of `config` on `run`'s device,
/// in a folder of its own that is removed after; the config's run and checkpoint folders are
/// never touched. Says how far it is on stderr every 5 s. With `trace_path`, 5 more steps after
/// those run under LibTorch's Kineto profiler (train.profile) and their trace is written there.
StepProfile profile_steps(train::Config config, const train::RunDevice& run, int steps, const std::string& trace_path = "");

/// The profile as JSON (schema gputrain.profile.step/1).
std::string step_profile_json(const StepProfile& profile);
/// The profile as the lines `profile --step` prints.
std::string step_profile_text(const StepProfile& profile);

}  // namespace gputrain::profile
