#include "plateau.hpp"

#include "gputrain/core/units.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/metrics.hpp"
#include "early_stop.hpp"
#include "train/report/human_lines.hpp"

namespace gputrain::train {

std::string observe_plateau(const Config& config, TrainingProgress& progress, double value) {
  const auto& scheduler = config.scheduler;
  if (scheduler.name != "plateau") return "";
  if (!progress.plateau_reference || improves(value, *progress.plateau_reference, maximizes(config.checkpoint))) {
    progress.plateau_reference = value;
    progress.plateau_epochs_without_improvement = 0;
    return "";
  }
  if (++progress.plateau_epochs_without_improvement <= scheduler.patience) return "";
  const auto& metric = config.checkpoint.best_metric;
  const auto waited = progress.plateau_epochs_without_improvement;
  // The rate after warm-up, before and after the decay: the floor may hold it where it was.
  const auto rate = [&](double scale) { return learning_rate_at(scheduler, config.optimizer.lr, scheduler.warmup_steps, 0, scale); };
  const double before = rate(progress.plateau_scale);
  progress.plateau_scale *= scheduler.gamma;
  progress.plateau_epochs_without_improvement = 0;
  const double after = rate(progress.plateau_scale);
  if (after >= before) return "";
  return metric + " has not improved on " + metric_text(metric, *progress.plateau_reference) + " for " + core::counted(waited, "epoch") +
         " (scheduler.patience: " + std::to_string(scheduler.patience) + "): learning rate " + short_number(before) + " -> " + short_number(after) +
         (after > config.optimizer.lr * progress.plateau_scale ? ", the floor (scheduler.min_lr)" : " (x scheduler.gamma " + short_number(scheduler.gamma) + ")");
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

}  // namespace gputrain::train
