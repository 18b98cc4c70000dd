#pragma once
// scheduler.name: plateau, PyTorch's ReduceLROnPlateau: after each epoch's validation, whether the
// figure best.pt is kept by (checkpoint.best_metric) improved on the best value so far, and when
// more than scheduler.patience validations in a row have not, the learning rate's decay. The rule
// is here for the callback (plateau_callback) and its tests; its state is the callback's, and the
// rate's factor the run's (RunControl::lr_scale), both saved in checkpoints.

#include <string>

#include <cstdint>
#include <optional>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// What the plateau schedule has counted: the factor the learning rate is at (each decay
/// multiplies it by scheduler.gamma), the value the next validation must beat, and the
/// validations since it was set.
struct PlateauState {
  double plateau_scale = 1.0;
  std::optional<double> plateau_reference;
  std::int64_t plateau_epochs_without_improvement = 0;
};

/// Takes the validation figure `value` of `config.checkpoint.best_metric` into `state`. As
/// ReduceLROnPlateau (threshold 0, cooldown 0): a value better than the best so far becomes the
/// reference; the (patience + 1)-th validation in a row that is not multiplies the scale by
/// scheduler.gamma and starts the count again. Returns the line that says so when the learning
/// rate went down ("" otherwise; nothing is said once min_lr holds it). A no-op for other schedulers.
std::string observe_plateau(const Config& config, PlateauState& state, double value);

/// With early stopping as well: the line that says when it would stop the run before the first
/// decay could help (train.early_stop_patience <= scheduler.patience + 1), and what to set; ""
/// otherwise.
std::string plateau_patience_note(const Config& config);

}  // namespace gputrain::train
