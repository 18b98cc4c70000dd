#pragma once
// scheduler.name: plateau, PyTorch's ReduceLROnPlateau: after each epoch's validation, whether the
// figure best.pt is kept by (checkpoint.best_metric) improved on the best value so far, and when
// more than scheduler.patience validations in a row have not, the learning rate's decay. Private
// to the train area: the trainer's epoch end calls it. The state lives in TrainingProgress, so a
// resumed run goes on at the same rate and count.

#include <string>

#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Takes the validation figure `value` of `config.checkpoint.best_metric` into `progress`. As
/// ReduceLROnPlateau (threshold 0, cooldown 0): a value better than the best so far becomes the
/// reference; the (patience + 1)-th validation in a row that is not multiplies the scale by
/// scheduler.gamma and starts the count again. Returns the line that says so when the learning
/// rate went down ("" otherwise; nothing is said once min_lr holds it). A no-op for other schedulers.
std::string observe_plateau(const Config& config, TrainingProgress& progress, double value);

/// With early stopping as well: the line that says when it would stop the run before the first
/// decay could help (train.early_stop_patience <= scheduler.patience + 1), and what to set; ""
/// otherwise.
std::string plateau_patience_note(const Config& config);

}  // namespace gputrain::train
