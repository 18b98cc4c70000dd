// The lines `gputrain train` ends a finished run with: what it did, how fast, where things are.
#include <cmath>
#include <sstream>

#include "gputrain/core/duration.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/device_cache.hpp"
#include "gputrain/train/fit_summary.hpp"
#include "gputrain/train/metrics.hpp"

namespace gputrain::train {
namespace {

// "done: 200 steps in 0:12, final loss 0.1234, val accuracy 95.00%, 1234 samples/s in the training
// steps, ...": the time is the whole run's, the rate the steps' alone (validation and checkpoints apart).
void done_line(std::ostream& out, const FitResult& result, const Config& config) {
  out << "done: ";
  if (!result.early_stop_reason.empty() && result.epochs_done < config.train.epochs)
    out << "stopped early after epoch " << result.epochs_done << " of " << config.train.epochs << ", ";
  else if (!result.early_stop_reason.empty())  // every epoch ran: only the best epoch's weights tell it apart
    out << "early stopping's patience ran out at the last epoch (" << result.epochs_done << "), ";
  if (result.time_limit_reached)
    out << "stopped at train.max_time " << core::duration_text(config.train.max_time) << " after step " << result.steps << " of "
        << result.total_steps << ", ";
  out << core::counted(result.steps, "step") << " in " << train::format_duration(result.run_seconds);
  if (result.last_loss) out << ", final loss " << core::format_fixed(*result.last_loss, 4);
  if (result.last_epoch && (result.last_epoch->val_accuracy || result.last_epoch->val_mse)) {
    const auto& e = *result.last_epoch;
    if (e.val_accuracy) out << ", val accuracy " << core::format_fixed(100 * *e.val_accuracy, 2) << "%";
    if (e.val_balanced_accuracy && result.show_balanced_accuracy)
      out << " (balanced " << core::format_fixed(100 * *e.val_balanced_accuracy, 2) << "%)";
    if (e.val_mse) out << ", val mse " << core::format_fixed(*e.val_mse, 4);  // as the epoch lines print it
    if (e.val_mae) out << ", val mae " << core::format_fixed(*e.val_mae, 4);  // in the targets' units: the one to read
    // Validation runs at epochs' ends: the figure is older than the final weights then.
    if (result.ended_inside_epoch > 0) out << " (at the end of epoch " << e.epoch + 1 << ")";
  }
  if (result.samples_per_second > 0)
    out << ", " << core::format_fixed(result.samples_per_second, 0) << " samples/s in the training steps, data stall "
        << core::format_fixed(result.data_stall_percent, 1) << "%";
  if (result.oom_events > 0)
    out << ", " << result.oom_events << " out-of-memory events survived (micro-batch " << result.batch_size << " -> " << result.micro_batch
        << ")";
  if (result.skipped_samples > 0)
    out << ", " << core::counted(result.skipped_samples, "unreadable sample") << " skipped (named in training.log)";
  if (result.alerts > 0) out << ", " << core::counted(result.alerts, "alert") << " (warnings above and in training.log)";
}

// The lines under it: what ended the run, the data, the ranks, the weights.
void detail_lines(std::ostream& out, const FitResult& result, const Config& config, bool on_gpu) {
  if (result.ended_inside_epoch > 0 && result.has_validation)
    out << "\n  validation: " << (result.time_limit_reached ? "train.max_time" : "train.max_steps") << " ended the run "
        << result.steps_into_epoch << " of " << result.steps_per_epoch << " steps into epoch " << result.ended_inside_epoch
        << ", before that epoch's validation";
  if (result.data_cache != "none")
    out << "\n  data: data.cache " << data::placement_text(result.data_cache, on_gpu) << ", loaded once in "
        << core::format_fixed(result.data_load_seconds, 2) << " s before the first epoch";
  if (result.gradient_buckets > 0) {
    const auto sent = result.gradient_buckets * (result.steps - result.start_step);
    out << "\n  distributed: " << core::counted(result.world_size, "rank") << ", "
        << core::counted(result.gradient_buckets, "gradient bucket") << " per step, " << result.buckets_sent_in_backward << " of " << sent
        << " sent while backward ran; steps waited " << core::format_fixed(result.gradient_wait_seconds, 3) << " s for them";
    if (result.communication_hidden_share)
      out << ", which took " << core::format_fixed(*result.communication_seconds, 3)
          << " s: " << core::format_fixed(100 * *result.communication_hidden_share, 0) << "% hidden behind backward";
  }
  if (!result.early_stop_reason.empty()) out << "\n  early stop: " << result.early_stop_reason;
  if (result.time_limit_reached)
    out << "\n  time limit: " << core::duration_text(std::round(result.trained_seconds)) << " trained in all; " << result.last_checkpoint
        << " holds the state, so the same command with a larger train.max_time"
        << (config.checkpoint.resume == "auto" ? "" : " and checkpoint.resume: auto") << " trains on from there";
  out << "\n  weights: " << result.weights_path;
  if (result.weights_epoch > 0)
    out << " (epoch " << result.weights_epoch << "'s, the best " << config.checkpoint.best_metric << ": "
        << train::metric_text(config.checkpoint.best_metric, result.weights_metric.value_or(0.0)) << ")";
  out << "\n  run dir: " << result.run_dir << "\n";
}

}  // namespace

std::string fit_summary(const FitResult& result, const Config& config, bool on_gpu) {
  std::ostringstream out;
  done_line(out, result, config);
  detail_lines(out, result, config, on_gpu);
  return out.str();
}

}  // namespace gputrain::train
