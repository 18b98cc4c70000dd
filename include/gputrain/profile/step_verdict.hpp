#pragma once
// What limits a training step, from `gputrain profile --step`'s figures: the data, the host
// queueing kernels, or the GPU itself.

#include <optional>
#include <string>

namespace gputrain::profile {

enum class StepVerdict {
  data_starved,   ///< the loop waits for batches: a faster loader setting or data.cache vram helps
  host_bound,     ///< the data keeps up but the GPU idles between kernels: a larger batch helps
  compute_bound,  ///< neither: the GPU is busy with the step itself
};

/// Data-starved above a 10 % stall; host-bound when the GPU was busy less than 70 % of the time
/// (CUPTI's busy share, else NVML's utilisation; nullopt without a GPU or either: then only the
/// stall can decide); compute-bound otherwise.
StepVerdict judge_step(double data_stall_percent, std::optional<double> gpu_busy_percent);

/// "data-starved", "host-bound", "compute-bound" (the JSON's `verdict`).
const char* to_string(StepVerdict verdict);

/// One line for the console: what it means and what to change.
std::string advice(StepVerdict verdict);

}  // namespace gputrain::profile
