#include "early_stop.hpp"

#include <cstdio>

#include "gputrain/core/units.hpp"
#include "gputrain/train/metrics.hpp"

namespace gputrain::train {
namespace {

// The margin in the units the metric is shown in: an accuracy's in percentage points.
std::string delta_text(const std::string& metric, double delta) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", is_accuracy_metric(metric) ? 100 * delta : delta);
  return std::string(text) + (is_accuracy_metric(metric) ? " points" : "");
}

// "improved on 0.3412" or, with a margin, "improved on 0.3412 by more than 0.001".
std::string against(const EarlyStopRule& rule, double reference) {
  return metric_text(rule.metric, reference) + (rule.min_delta > 0 ? " by more than " + delta_text(rule.metric, rule.min_delta) : "");
}

}  // namespace

bool maximizes(const CheckpointConfig& checkpoint) {
  return checkpoint.best_mode == "max" || (checkpoint.best_mode == "auto" && is_accuracy_metric(checkpoint.best_metric));
}

EarlyStopRule EarlyStopRule::from(const Config& config) {
  return {config.checkpoint.best_metric, maximizes(config.checkpoint), config.train.early_stop_patience,
          config.train.early_stop_min_delta};
}

bool improves(double value, double reference, bool maximize, double margin) {
  return maximize ? value > reference + margin : value < reference - margin;
}

bool EarlyStopRule::improves(double value, double reference) const { return train::improves(value, reference, maximize, min_delta); }

std::string observe_validation(const EarlyStopRule& rule, TrainingProgress& progress, double value) {
  if (!rule.on()) return "";
  if (!progress.early_stop_reference || rule.improves(value, *progress.early_stop_reference)) {
    progress.early_stop_reference = value;
    progress.epochs_without_improvement = 0;
    return "";
  }
  ++progress.epochs_without_improvement;
  return rule.metric + " " + metric_text(rule.metric, value) + " has not improved on " + against(rule, *progress.early_stop_reference) + ": " +
         std::to_string(progress.epochs_without_improvement) + " of " + std::to_string(rule.patience) +
         " epochs without improvement before the run stops (train.early_stop_patience)";
}

bool stopped_early(const EarlyStopRule& rule, const TrainingProgress& progress) {
  return rule.on() && progress.epochs_without_improvement >= rule.patience;
}

std::string early_stop_reason(const EarlyStopRule& rule, const TrainingProgress& progress) {
  return rule.metric + " has not improved on " + against(rule, progress.early_stop_reference.value_or(0.0)) + " for " +
         core::counted(progress.epochs_without_improvement, "epoch") + " (train.early_stop_patience: " + std::to_string(rule.patience) + ")";
}

}  // namespace gputrain::train
