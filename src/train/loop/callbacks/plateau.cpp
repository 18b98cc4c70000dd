#include "plateau.hpp"

#include "builtin_callbacks.hpp"
#include "early_stop.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/metrics.hpp"
#include "train/report/human_lines.hpp"

namespace gputrain::train {

std::string observe_plateau(const Config& config, PlateauState& state, double value) {
  const auto& scheduler = config.scheduler;
  if (scheduler.name != "plateau") return "";
  if (!state.plateau_reference || improves(value, *state.plateau_reference, maximizes(config.checkpoint))) {
    state.plateau_reference = value;
    state.plateau_epochs_without_improvement = 0;
    return "";
  }
  if (++state.plateau_epochs_without_improvement <= scheduler.patience) return "";
  const auto& metric = config.checkpoint.best_metric;
  const auto waited = state.plateau_epochs_without_improvement;
  // The rate after warm-up, before and after the decay: the floor may hold it where it was.
  const auto rate = [&](double scale) { return learning_rate_at(scheduler, config.optimizer.lr, scheduler.warmup_steps, 0, scale); };
  const double before = rate(state.plateau_scale);
  state.plateau_scale *= scheduler.gamma;
  state.plateau_epochs_without_improvement = 0;
  const double after = rate(state.plateau_scale);
  if (after >= before) return "";
  return metric + " has not improved on " + metric_text(metric, *state.plateau_reference) + " for " + core::counted(waited, "epoch") +
         " (scheduler.patience: " + std::to_string(scheduler.patience) + "): learning rate " + short_number(before) + " -> " +
         short_number(after) +
         (after > config.optimizer.lr * state.plateau_scale ? ", the floor (scheduler.min_lr)"
                                                            : " (x scheduler.gamma " + short_number(scheduler.gamma) + ")");
}

std::string plateau_patience_note(const Config& config) {
  const auto stop_after = config.train.early_stop_patience, decay_after = config.scheduler.patience + 1;
  if (config.scheduler.name != "plateau" || stop_after == 0 || stop_after > decay_after) return "";
  return "train.early_stop_patience " + std::to_string(stop_after) + " stops the run after " + core::counted(stop_after, "epoch") +
         " without improvement, " + (stop_after == decay_after ? "as" : "before") + " scheduler: plateau first lowers the rate (after " +
         core::counted(decay_after, "epoch") + ", scheduler.patience " + std::to_string(config.scheduler.patience) +
         " + 1), so no epoch trains at the lowered rate; set train.early_stop_patience: " + std::to_string(2 * decay_after) +
         " or a smaller scheduler.patience";
}

namespace {

class Plateau final : public Callback {
 public:
  explicit Plateau(const Config& config) : config_(config) {}

  std::string name() const override { return "plateau"; }

  void on_validation_end(RunControl& run, const EpochMetrics& metrics) override {
    const auto value = watched_value(metrics, config_.checkpoint.best_metric);
    if (!value) return;
    state_.plateau_scale = run.lr_scale();
    const auto decay = observe_plateau(config_, state_, *value);
    run.set_lr_scale(state_.plateau_scale);
    if (!decay.empty()) run.note(decay);
  }

  CallbackState state_dict() const override { return watch_state(state_.plateau_reference, state_.plateau_epochs_without_improvement); }
  void load_state_dict(const CallbackState& state) override {
    load_watch_state(state, state_.plateau_reference, state_.plateau_epochs_without_improvement);
  }

 private:
  const Config config_;
  PlateauState state_;
};

}  // namespace

std::unique_ptr<Callback> plateau_callback(const Config& config) {
  if (config.scheduler.name != "plateau") return nullptr;
  return std::make_unique<Plateau>(config);
}

}  // namespace gputrain::train
