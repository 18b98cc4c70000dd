#include "gputrain/profile/step_verdict.hpp"

namespace gputrain::profile {

StepVerdict judge_step(double data_stall_percent, std::optional<double> gpu_busy_percent) {
  // Waiting for data is the loader's fault; a GPU that is idle while the data keeps up waits for
  // the host instead (launching small kernels, per-step host work), which a faster loader cannot fix.
  constexpr double kStallPercent = 10, kBusyPercent = 70;
  if (data_stall_percent > kStallPercent) return StepVerdict::data_starved;
  if (gpu_busy_percent && *gpu_busy_percent < kBusyPercent) return StepVerdict::host_bound;
  return StepVerdict::compute_bound;
}

const char* to_string(StepVerdict verdict) {
  switch (verdict) {
    case StepVerdict::data_starved:
      return "data-starved";
    case StepVerdict::host_bound:
      return "host-bound";
    case StepVerdict::compute_bound:
      break;
  }
  return "compute-bound";
}

std::string advice(StepVerdict verdict) {
  switch (verdict) {
    case StepVerdict::data_starved:
      return "the GPU is starving for data: run `gputrain profile CONFIG.yaml` for a faster loader setting, or data.cache: vram "
             "if the dataset fits";
    case StepVerdict::host_bound:
      return "the data keeps up, but the GPU is idle between kernels: the host cannot queue work fast enough (small kernels, "
             "per-step host work); a larger train.batch_size usually helps, a faster loader will not";
    case StepVerdict::compute_bound:
      break;
  }
  return "the data keeps up; the step is compute-bound";
}

}  // namespace gputrain::profile
