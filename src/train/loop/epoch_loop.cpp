// Trainer::State::run_epochs, the step loop of fit(): epochs of steps, the step lines, and what an
// epoch's end does (validation, best.pt, early stopping, the plateau schedule, checkpoints).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "gputrain/core/stop_signal.hpp"
#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/optimizer.hpp"
#include "train/loop/callbacks/early_stop.hpp"
#include "train/loop/callbacks/plateau.hpp"
#include "train/step/step_failures.hpp"
#include "trainer_state.hpp"

namespace gputrain::train {
namespace {

// The best-checkpoint metric of an epoch, when it has one.
std::optional<double> metric_value(const EpochMetrics& m, const std::string& name) {
  if (name == "val_loss") return m.val_loss;
  if (name == "val_accuracy") return m.val_accuracy;
  if (name == "val_balanced_accuracy") return m.val_balanced_accuracy;
  if (name == "val_mse") return m.val_mse;
  if (name == "val_mae") return m.val_mae;
  return std::nullopt;
}

// The steps since the last step line: what that line averages over. The loss is summed on the
// device and read once a line, not once a step (a read waits for the GPU).
struct StepWindow {
  Clock::time_point start = Clock::now();
  double data_seconds = 0;
  double paused_seconds = 0;  // validation and checkpoints inside the window: not step time
  std::int64_t steps = 0, samples = 0;
  std::int64_t skipped_before = 0;  // the GradScaler's skipped steps when the window opened
  at::Tensor loss;
};

}  // namespace

class Trainer::State::EpochLoop {
 public:
  EpochLoop(Trainer::State& s, FitResult& result, RunTotals& totals)
      : s_(s),
        result_(result),
        totals_(totals),
        early_stop_(EarlyStopRule::from(s.config)),
        sampler_(s.train_size, s.config.data.shuffle, static_cast<std::uint64_t>(s.config.train.seed), s.ranks.rank(), s.ranks.world_size(),
                 s.config.data.drop_last) {
    window_.loss = at::zeros({}, at::TensorOptions().device(s.device));
    window_.skipped_before = s.scaler->skipped_steps();
  }

  void run() {
    s_.model->set_training(true);
    // A resumed run that has used its train.max_time already. The checkpoint's figure, not the
    // clock: every rank read the same one, so none enters a step the others skip.
    result_.time_limit_reached = s_.config.train.max_time > 0 && s_.trained_before >= s_.config.train.max_time;
    while (s_.progress.step < s_.total_steps && !result_.interrupted && !result_.time_limit_reached && !stopped_early(early_stop_, s_.progress))
      run_epoch();
  }

 private:
  // One epoch's steps, or those a resumed epoch has left; then its end, once it is over on every rank.
  void run_epoch() {
    auto& progress = s_.progress;
    const bool distributed = s_.ranks.distributed();
    const auto epoch_start = Clock::now();
    auto order = sampler_.order(progress.epoch);
    if (s_.config.data.drop_last) order = order.slice(0, 0, order.size(0) / s_.effective_batch * s_.effective_batch);
    at::Tensor epoch_loss = at::zeros({}, at::TensorOptions().device(s_.device));
    std::int64_t epoch_steps = 0;
    const std::int64_t n = order.size(0);
    // A resumed epoch starts at the saved position, so it sees exactly the samples it had left.
    s_.placement.train_feed->start(order.slice(0, std::min(progress.position, n)), s_.effective_batch);
    // A rank whose shard is through keeps joining the steps (with no samples) until all are.
    while ((progress.position < n || distributed) && progress.step < s_.total_steps) {
      if (s_.options.before_batch) s_.options.before_batch();
      s_.working_on("step " + std::to_string(progress.step + 1) + " of " + std::to_string(s_.total_steps));
      const auto data_start = Clock::now();
      auto fed = progress.position < n ? s_.placement.train_feed->next() : std::nullopt;
      const double data_seconds = seconds_since(data_start);
      if (!fed) progress.position = n;  // through, or only unreadable samples were left
      const std::int64_t rows = fed ? fed->batch.size() : 0;
      std::int64_t global_rows = rows;
      if (distributed) {
        // Each rank's clock decides for it; one whose time is up ends the run for all.
        const auto agreed = s_.ranks.agree(s_.train_guard->micro_batch(), core::stop_requested(), s_.time_is_up(), rows, progress.step);
        if (agreed.stop || agreed.time_up) {
          result_.interrupted = agreed.stop;  // a signal is the stronger reason: the run resumes
          result_.time_limit_reached = !agreed.stop;
          s_.time_limit_agreed = !agreed.stop;
          break;
        }
        if (agreed.rows == 0) break;  // the epoch is over on every rank
        s_.agreed_micro_batch = agreed.micro_batch;
        global_rows = agreed.rows;
      } else if (!fed) {
        break;
      }
      // The schedule is a function of the step (and, for plateau, of the decays so far, which the
      // checkpoint keeps), so a resumed run picks it up exactly.
      const double lr = learning_rate_at(s_.config.scheduler, s_.config.optimizer.lr, progress.step, s_.total_steps, progress.plateau_scale);
      set_learning_rate(*s_.optimizer, lr);
      if (fed && s_.options.on_batch) s_.options.on_batch(fed->batch);
      const auto loss = s_.train_step(fed ? &fed->batch : nullptr, global_rows);
      if (fed) progress.position += fed->covered;
      ++progress.step;
      ++epoch_steps;
      ++window_.steps;
      ++totals_.steps;
      window_.samples += rows;
      totals_.samples += rows;
      window_.data_seconds += data_seconds;
      totals_.data_seconds += data_seconds;
      window_.loss += loss;
      epoch_loss += loss;
      // With several ranks, each loss is this rank's share of the global batch's mean: summed over ranks.
      if (!result_.first_loss) result_.first_loss = s_.ranks.sum({loss.item<double>()}, "the sum of the first step's loss")[0];

      // Ranks agree on it before the next step instead; a plain run's last step is reported.
      const bool out_of_time = !distributed && s_.time_is_up();
      // The first step is reported too: a slow run (a ResNet-50 on a CPU takes a minute a step)
      // would otherwise say nothing, not even its ETA, until logging.every_steps steps have passed.
      if (progress.step % s_.config.logging.every_steps == 0 || progress.step == s_.total_steps || totals_.steps == 1 || out_of_time)
        report_steps(lr);
      if (s_.config.checkpoint.every_steps > 0 && progress.step % s_.config.checkpoint.every_steps == 0) checkpoint();
      if (s_.options.after_step) s_.options.after_step(progress.step);
      if (!distributed && core::stop_requested()) {  // ranks stop together, at the next agreement
        result_.interrupted = true;
        break;
      }
      if (out_of_time) {
        result_.time_limit_reached = true;
        break;
      }
    }
    s_.report_skipped();
    // Whether the epoch is over must be the same on every rank: validation is collective. A stop
    // agreed on while a rank still had a sample left (shards differ by one) leaves the others
    // through; the epoch then ends after the resume, on every rank at once.
    const bool epoch_over = distributed ? s_.ranks.min(progress.position >= n ? 1 : 0, "whether epoch " + std::to_string(progress.epoch + 1) + " is over") == 1
                                        : progress.position >= n;
    if (!epoch_over) return;
    const double epoch_loss_sum = s_.ranks.sum({epoch_loss.item<double>()}, "the sum of epoch " + std::to_string(progress.epoch + 1) + "'s loss")[0];
    end_epoch(epoch_steps > 0 ? epoch_loss_sum / static_cast<double>(epoch_steps) : 0.0, seconds_since(epoch_start));
  }

  // The step line: the window's means, summed over ranks; then a new window.
  void report_steps(double lr) {
    auto& progress = s_.progress;
    StepMetrics m;
    m.step = progress.step;
    m.epoch = progress.epoch;
    const auto window = s_.ranks.sum({window_.loss.item<double>(), static_cast<double>(window_.samples)},  // syncs the device
                                     "the sum of the logged loss at step " + std::to_string(progress.step));
    m.loss = window[0] / static_cast<double>(window_.steps);
    stop_if_diverged(m.loss);
    const double window_seconds = seconds_since(window_.start) - window_.paused_seconds;
    m.samples_per_second = window[1] / window_seconds;
    m.data_seconds = window_.data_seconds / static_cast<double>(window_.steps);
    m.compute_seconds = (window_seconds - window_.data_seconds) / static_cast<double>(window_.steps);
    m.lr = lr;
    m.loss_scale = s_.scaler->scale_value();
    m.skipped_steps = s_.scaler->skipped_steps();
    // The ETA keeps the pauses: the validations and checkpoints still ahead take time too.
    m.eta_seconds = static_cast<double>(s_.total_steps - progress.step) * (window_seconds + window_.paused_seconds) /
                    static_cast<double>(window_.steps);
    if (s_.config.train.max_time > 0) m.eta_seconds = std::min(m.eta_seconds, std::max(0.0, s_.config.train.max_time - s_.trained_seconds()));
    const auto memory = memory::memory_figures(s_.device, /*with_limit=*/false);  // no /proc or driver call per report
    m.memory_allocated = memory.allocated;
    m.memory_reserved = memory.reserved;
    m.memory_peak = memory.peak;
    m.micro_batch = s_.train_guard->micro_batch();
    m.oom_events = s_.oom_events();
    for (auto& sink : s_.sinks) sink->on_step(m);
    result_.last_loss = m.loss;
    window_.loss.zero_();
    window_.steps = window_.samples = 0;
    window_.skipped_before = s_.scaler->skipped_steps();
    window_.data_seconds = window_.paused_seconds = 0;
    window_.start = Clock::now();
  }

  // Validation, best.pt, early stopping's and the plateau schedule's count, and the epoch's checkpoint.
  void end_epoch(double train_loss, double epoch_seconds) {
    auto& progress = s_.progress;
    EpochMetrics metrics;
    paused([&] { metrics = s_.validate(progress.epoch, train_loss, epoch_seconds); });
    for (auto& sink : s_.sinks) sink->on_epoch(metrics);
    result_.last_epoch = metrics;
    ++progress.epoch;
    progress.position = 0;
    const auto& best_metric = s_.config.checkpoint.best_metric;
    const auto value = metric_value(metrics, best_metric);
    if (value && (!progress.best_metric || improves(*value, *progress.best_metric, maximizes(s_.config.checkpoint)))) {
      progress.best_metric = *value;
      progress.best_epoch = progress.epoch;
      if (s_.ranks.writer())
        paused([&] {
          progress.trained_seconds = s_.trained_seconds();
          s_.working_on("writing best.pt");
          s_.note("best " + best_metric + " so far: " + metric_text(best_metric, *value) + " -> " +
                  s_.refused_saves_explained([&] { return s_.store->save_best(s_.parts(), progress, s_.config_yaml); }));
        });
    }
    // The figures are sums over all ranks: every rank comes to the same decision.
    if (value) {
      const auto waiting = observe_validation(early_stop_, progress, *value);
      if (!waiting.empty()) s_.note(waiting);
      const auto decay = observe_plateau(s_.config, progress, *value);
      if (!decay.empty()) s_.note(decay);
    }
    if (s_.config.checkpoint.every_epochs > 0 && progress.epoch % s_.config.checkpoint.every_epochs == 0) checkpoint();
  }

  // A run whose loss turned nan/inf changes nothing for the better: stop before it writes a
  // checkpoint of broken weights over good ones. With fp16's GradScaler a non-finite loss is
  // harmless as long as some steps still update (the scaler skips the others); when every step
  // of the window was skipped, nothing is learning any more either.
  void stop_if_diverged(double mean_loss) const {
    if (std::isfinite(mean_loss)) return;
    const bool all_skipped = s_.scaler->skipped_steps() - window_.skipped_before >= window_.steps;
    if (s_.scaler->enabled() && !all_skipped) return;
    Divergence divergence{mean_loss, s_.progress.step - window_.steps + 1, s_.progress.step, s_.scaler->enabled(), s_.last_checkpoint};
    divergence.at_first_step = result_.start_step == 0 && result_.first_loss && !std::isfinite(*result_.first_loss);
    throw divergence_error(divergence, s_.config);  // data with NaN/inf never gets here: open_data refuses it
  }

  // A checkpoint between two step lines: the steps since the last line must be sound too.
  void checkpoint() {
    if (window_.steps > 0)
      stop_if_diverged(s_.ranks.sum({window_.loss.item<double>()}, "the sum of the loss before a checkpoint at step " +
                                                                       std::to_string(s_.progress.step))[0] /
                       static_cast<double>(window_.steps));
    paused([&] { s_.checkpoint(); });
  }

  // Validation and checkpoints are timed apart, so samples/s and the data stall describe the
  // training steps alone (a long validation would otherwise dilute the stall it is meant to show).
  template <typename Work>
  void paused(const Work& work) {
    const auto start = Clock::now();
    work();
    const double seconds = seconds_since(start);
    totals_.paused_seconds += seconds;
    window_.paused_seconds += seconds;
  }

  Trainer::State& s_;
  FitResult& result_;
  RunTotals& totals_;
  const EarlyStopRule early_stop_;
  const data::EpochSampler sampler_;
  StepWindow window_;
};

void Trainer::State::run_epochs(FitResult& result, RunTotals& totals) { EpochLoop(*this, result, totals).run(); }

}  // namespace gputrain::train
