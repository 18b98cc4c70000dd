#pragma once
// Early stopping (train.early_stop_patience): after each epoch's validation, whether the figure
// best.pt is kept by (checkpoint.best_metric) improved by more than train.early_stop_min_delta,
// and when the run has waited long enough for it. The rule is here for the callback
// (early_stop_callback) and its tests; its state is the callback's, saved in checkpoints.

#include <cstdint>
#include <optional>
#include <string>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Whether a larger checkpoint.best_metric is better: `max`, or `auto` with an accuracy.
bool maximizes(const CheckpointConfig& checkpoint);

/// A line when checkpoint.best_mode goes against its metric's sense (max for a loss or an error,
/// min for an accuracy): best.pt then keeps the worst epoch, and early stopping and the plateau
/// schedule wait for it to get worse. "" otherwise.
std::string best_mode_note(const CheckpointConfig& checkpoint);

/// Whether `value` beats `reference` by more than `margin`, larger or smaller as `maximize` says
/// (best.pt with no margin, early stopping with train.early_stop_min_delta).
bool improves(double value, double reference, bool maximize, double margin = 0);

struct EarlyStopRule {
  std::string metric;  ///< checkpoint.best_metric
  bool maximize = false;
  std::int64_t patience = 0;  ///< 0: off
  double min_delta = 0;

  static EarlyStopRule from(const Config& config);
  bool on() const { return patience > 0; }
  /// Whether `value` beats `reference` by more than min_delta, in the metric's direction.
  bool improves(double value, double reference) const;
};

/// What early stopping has counted: the value the next validation must beat by more than
/// train.early_stop_min_delta, and the validations in a row that have not.
struct EarlyStopState {
  std::optional<double> early_stop_reference;
  std::int64_t epochs_without_improvement = 0;
};

/// Counts this validation's `value` into `state`: a value that improves on the reference becomes
/// it and restarts the count, any other adds an epoch without improvement. Returns the line to
/// say for an epoch without improvement ("" for an improvement or when off).
std::string observe_validation(const EarlyStopRule& rule, EarlyStopState& state, double value);

/// Whether the run has stopped early: `patience` epochs in a row without improvement. A resumed
/// run that had stopped has nothing left to train, unless the patience was raised.
bool stopped_early(const EarlyStopRule& rule, const EarlyStopState& state);

/// Why the run stopped, for its end line: "val_loss has not improved on 0.3412 for 5 epochs
/// (train.early_stop_patience: 5)".
std::string early_stop_reason(const EarlyStopRule& rule, const EarlyStopState& state);

}  // namespace gputrain::train
