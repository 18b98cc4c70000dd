#pragma once
// Learning-rate schedules as pure functions of the step, so a resumed run needs only its step
// count to continue the schedule exactly.

#include <cstdint>
#include <string>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// The learning rate for optimizer step `step` (0-based) of `total_steps`, from `base_lr`:
/// linear warm-up over `warmup_steps`, then none (constant), step (x gamma every step_size),
/// cosine (down to min_lr at the last step), or onecycle (PyTorch's OneCycleLR with cosine
/// annealing: base_lr/25 -> base_lr over pct_start of the steps -> base_lr/25/1e4), or plateau
/// (base_lr x `plateau_scale`, the decays the validation figure has called for so far, never below
/// min_lr: PyTorch's ReduceLROnPlateau).
double learning_rate_at(const SchedulerConfig& config, double base_lr, std::int64_t step, std::int64_t total_steps,
                        double plateau_scale = 1.0);

/// What a run of `total_steps` steps should know of its rates before it starts: a learning rate of
/// 0 everywhere (no step changes a weight), a warm-up as long as the run (the rate never reaches
/// optimizer.lr), a step schedule whose first decay comes after the last step. Empty when none.
std::vector<std::string> schedule_notes(const OptimizerConfig& optimizer, const SchedulerConfig& scheduler, std::int64_t total_steps);

}  // namespace gputrain::train
