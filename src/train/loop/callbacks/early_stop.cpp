#include "early_stop.hpp"

#include <cstdio>

#include "builtin_callbacks.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/checkpoint.hpp"
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

std::string best_mode_note(const CheckpointConfig& checkpoint) {
  const auto& metric = checkpoint.best_metric;
  if (checkpoint.best_mode == "auto" || metric == "none" || maximizes(checkpoint) == is_accuracy_metric(metric)) return "";
  const bool max = checkpoint.best_mode == "max";
  return "checkpoint.best_mode " + checkpoint.best_mode + " keeps the epoch with the " + (max ? "highest " : "lowest ") + metric +
         ", the worst by that figure (early stopping and scheduler plateau wait for it to " + (max ? "rise" : "fall") +
         "); checkpoint.best_mode: auto takes min for losses and errors, max for accuracies";
}

EarlyStopRule EarlyStopRule::from(const Config& config) {
  return {config.checkpoint.best_metric, maximizes(config.checkpoint), config.train.early_stop_patience, config.train.early_stop_min_delta};
}

bool improves(double value, double reference, bool maximize, double margin) {
  return maximize ? value > reference + margin : value < reference - margin;
}

bool EarlyStopRule::improves(double value, double reference) const { return train::improves(value, reference, maximize, min_delta); }

std::string observe_validation(const EarlyStopRule& rule, EarlyStopState& state, double value) {
  if (!rule.on()) return "";
  if (!state.early_stop_reference || rule.improves(value, *state.early_stop_reference)) {
    state.early_stop_reference = value;
    state.epochs_without_improvement = 0;
    return "";
  }
  ++state.epochs_without_improvement;
  return rule.metric + " " + metric_text(rule.metric, value) + " has not improved on " + against(rule, *state.early_stop_reference) + ": " +
         std::to_string(state.epochs_without_improvement) + " of " + std::to_string(rule.patience) +
         " epochs without improvement before the run stops (train.early_stop_patience)";
}

bool stopped_early(const EarlyStopRule& rule, const EarlyStopState& state) {
  return rule.on() && state.epochs_without_improvement >= rule.patience;
}

std::string early_stop_reason(const EarlyStopRule& rule, const EarlyStopState& state) {
  return rule.metric + " has not improved on " + against(rule, state.early_stop_reference.value_or(0.0)) + " for " +
         core::counted(state.epochs_without_improvement, "epoch") + " (train.early_stop_patience: " + std::to_string(rule.patience) + ")";
}

namespace {

class EarlyStop final : public Callback {
 public:
  explicit EarlyStop(const Config& config) : rule_(EarlyStopRule::from(config)) {}

  std::string name() const override { return "early_stop"; }

  // A resumed run that had stopped early has nothing left to train, unless the patience was raised.
  void on_fit_start(RunControl& run) override {
    if (!stopped_early(rule_, state_)) return;
    if (run.progress().step < run.total_steps())
      run.note("nothing left to train: this run stopped early after epoch " + std::to_string(run.progress().epoch) + ", as " +
               early_stop_reason(rule_, state_) + "; to train on, raise train.early_stop_patience (0 turns early stopping off)");
    run.request_stop(StopReason::early_stop, early_stop_reason(rule_, state_));
  }

  // The figures are sums over all ranks: every rank comes to the same decision.
  void on_validation_end(RunControl& run, const EpochMetrics& metrics) override {
    const auto value = watched_value(metrics, rule_.metric);
    if (!value) return;
    const auto waiting = observe_validation(rule_, state_, *value);
    if (!waiting.empty()) run.note(waiting);
    if (stopped_early(rule_, state_)) run.request_stop(StopReason::early_stop, early_stop_reason(rule_, state_));
  }

  CallbackState state_dict() const override { return watch_state(state_.early_stop_reference, state_.epochs_without_improvement); }
  void load_state_dict(const CallbackState& state) override {
    load_watch_state(state, state_.early_stop_reference, state_.epochs_without_improvement);
  }

 private:
  const EarlyStopRule rule_;
  EarlyStopState state_;
};

}  // namespace

std::unique_ptr<Callback> early_stop_callback(const Config& config) {
  if (config.train.early_stop_patience <= 0) return nullptr;
  return std::make_unique<EarlyStop>(config);
}

}  // namespace gputrain::train
