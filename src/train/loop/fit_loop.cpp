// Trainer::State::FitLoop: epochs of steps, the step lines, an epoch's end, and the RunControl
// the callbacks act through. What happens at those points is the callbacks' (loop/callbacks/).
#include "fit_loop.hpp"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "gputrain/core/stop_signal.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/optimizer.hpp"
#include "train/step/step_engine.hpp"

namespace gputrain::train {

Trainer::State::FitLoop::FitLoop(Trainer::State& s, FitResult& result)
    : s_(s),
      result_(result),
      sampler_(s.train_size, s.config.data.shuffle, static_cast<std::uint64_t>(s.config.train.seed), s.ranks.rank(), s.ranks.world_size(),
               s.config.data.drop_last),
      trained_before_(s.progress.trained_seconds) {
  window_.loss = at::zeros({}, at::TensorOptions().device(s.device));
  window_.skipped_before = s.scaler->skipped_steps();
}

void Trainer::State::FitLoop::start() {
  const auto& progress = s_.progress;
  if (progress.step > 0 && progress.step >= s_.total_steps)
    note("nothing left to train: " +
         (progress.step == s_.total_steps ? "this run already finished its " + core::counted(s_.total_steps, "step")
                                          : "the checkpoint is at step " + std::to_string(progress.step) + ", past this run's " +
                                                core::counted(s_.total_steps, "step")) +
         "; to train again set checkpoint.resume: never or another logging.dir, to train longer raise "
         "train.epochs or train.max_steps");
  each_callback([&](Callback& c) { c.on_fit_start(*this); });
  // The run's clocks start now: what the callbacks set up (NVML, a TensorBoard file, an MLflow
  // run) is not training time, and a short fast run would read that as a slower step.
  totals_.start = window_.start = Clock::now();
  // What a callback decided from the checkpoint every rank read holds on every rank: in effect now.
  if (pending_) stop_.swap(pending_);
}

void Trainer::State::FitLoop::run() {
  s_.model->set_training(true);
  while (s_.progress.step < s_.total_steps && !result_.interrupted && !stop_) run_epoch();
  // A request made at the run's last step or epoch, which no agreement before a step followed.
  if (!stop_ && pending_) stop_.swap(pending_);
}

void Trainer::State::FitLoop::request_stop(StopReason reason, const std::string& why) {
  if (stop_requested()) return;  // the first reason stands
  stop_why_ = why;
  // A plain run stops at once; ranks stop together, at the agreement before the next step.
  (s_.ranks.distributed() ? pending_ : stop_) = reason;
}

// One epoch's steps, or those a resumed epoch has left; then its end, once it is over on every rank.
void Trainer::State::FitLoop::run_epoch() {
  auto& progress = s_.progress;
  const bool distributed = s_.ranks.distributed();
  const auto epoch_start = Clock::now();
  auto order = sampler_.order(progress.epoch);
  if (s_.config.data.drop_last) order = order.slice(0, 0, order.size(0) / s_.effective_batch * s_.effective_batch);
  if (s_.lone_samples.leave_out)  // setup/lone_sample.hpp
    order = order.slice(0, 0, order.size(0) - lone_last_pass(order.size(0), s_.effective_batch, s_.micro_batch));
  at::Tensor epoch_loss = at::zeros({}, at::TensorOptions().device(s_.device));
  std::int64_t epoch_steps = 0;
  double last_lr = 0;
  const std::int64_t n = order.size(0);
  const std::int64_t start_position = std::min(progress.position, n), samples_before = totals_.samples;
  // A resumed epoch starts at the saved position, so it sees exactly the samples it had left.
  s_.placement.train_feed->start(order.slice(0, start_position), s_.effective_batch);
  // A rank whose shard is through keeps joining the steps (with no samples) until all are.
  while ((progress.position < n || distributed) && progress.step < s_.total_steps) {
    if (s_.options.before_batch) s_.options.before_batch();
    s_.reporter.working_on("step " + std::to_string(progress.step + 1) + " of " + std::to_string(s_.total_steps));
    const auto data_start = Clock::now();
    auto fed = [&] {
      RECORD_USER_SCOPE("gputrain::data_wait");
      return progress.position < n ? s_.placement.train_feed->next() : std::nullopt;
    }();
    const double data_seconds = seconds_since(data_start);
    if (!fed) progress.position = n;  // through, or only unreadable samples were left
    const std::int64_t rows = fed ? fed->batch.size() : 0;
    StepRows step_rows{rows, rows};
    if (stops_before_step(fed.has_value(), step_rows)) break;
    const double lr = last_lr = schedule_learning_rates();
    const auto step_start = Clock::now();
    if (fed && s_.options.on_batch) s_.options.on_batch(fed->batch);
    s_.readout.wanted = s_.config.logging.grad_norm && logs_step(progress.step + 1, totals_.steps == 0);  // for its line only
    const auto loss = s_.engine->step(fed ? &fed->batch : nullptr, step_rows, progress.step, *s_.train_guard);
    if (s_.readout.wanted) window_.grad_norm = s_.readout.value;
    if (batch_sizes_seen_.insert(rows).second || s_.engine->last_step_was_setup()) {
      window_.setup_seconds += seconds_since(step_start);
      window_.setup_samples += rows;
      ++window_.setup_steps;
    }
    s_.reporter.oom_events(*s_.train_guard);
    if (fed) progress.position += fed->covered;
    ++progress.step;
    ++epoch_steps;
    epoch_loss += loss;
    tally_step(rows, data_seconds, loss);
    // With several ranks, each loss is this rank's share of the global batch's mean: summed over ranks.
    if (!result_.first_loss) result_.first_loss = s_.ranks.sum({loss.item<double>()}, "the sum of the first step's loss")[0];
    // The first step is reported too: a slow run (a ResNet-50 on a CPU takes a minute a step)
    // would otherwise say nothing, not even its ETA, until logging.every_steps steps have passed.
    const bool logged = logs_step(progress.step, totals_.steps == 1);
    if (logged) report_steps(lr);
    const bool kept = std::exchange(s_.readout.keep_gradients, false);  // a callback may ask again for the next step
    each_callback([&](Callback& c) { c.on_step_end(*this, progress.step); });
    if (kept) s_.readout.gradients.clear();
    write_due_checkpoints();
    if (!distributed && stop_ && !logged) report_steps(lr);  // a plain run's last step is reported
    if (s_.options.after_step) s_.options.after_step(progress.step);
    if (!distributed && core::stop_requested()) {  // ranks stop together, at the next agreement
      result_.interrupted = true;
      break;
    }
    if (stop_) break;
  }
  s_.report_skipped();
  if (!result_.interrupted && !stop_) refuse_unread_epoch(start_position, n - start_position, totals_.samples - samples_before);
  // Whether the epoch is over must be the same on every rank: validation is collective. A stop
  // agreed on while a rank still had a sample left (shards differ by one) leaves the others
  // through; the epoch then ends after the resume, on every rank at once.
  const bool epoch_over =
      distributed ? s_.ranks.min(progress.position >= n ? 1 : 0, "whether epoch " + std::to_string(progress.epoch + 1) + " is over") == 1
                  : progress.position >= n;
  if (!epoch_over) return;
  const double epoch_loss_sum =
      s_.ranks.sum({epoch_loss.item<double>()}, "the sum of epoch " + std::to_string(progress.epoch + 1) + "'s loss")[0];
  // A loss that turned nan/inf since the last step line gets its line now (the same on every rank):
  // the callbacks stop a diverged run there, before it validates and reports broken weights.
  if (!std::isfinite(epoch_loss_sum) && window_.steps > 0) report_steps(last_lr);
  end_epoch(epoch_steps > 0 ? std::optional(epoch_loss_sum / static_cast<double>(epoch_steps)) : std::nullopt, seconds_since(epoch_start));
}

// The step just taken, in the step line's window and the run's totals.
void Trainer::State::FitLoop::tally_step(std::int64_t rows, double data_seconds, const at::Tensor& loss) {
  ++window_.steps;
  ++totals_.steps;
  window_.samples += rows;
  totals_.samples += rows;
  window_.data_seconds += data_seconds;
  totals_.data_seconds += data_seconds;
  window_.loss += loss;
}

// The schedule is a function of the step (and of the factor callbacks scaled it by, which the
// checkpoint keeps), so a resumed run picks it up exactly. Returns optimizer.lr's rate now.
double Trainer::State::FitLoop::schedule_learning_rates() {
  const auto& progress = s_.progress;
  set_learning_rates(*s_.optimizer, s_.group_lrs, [&](double base) {  // each group's own base, scheduled alike
    return learning_rate_at(s_.config.scheduler, base, progress.step, s_.total_steps, progress.lr_scale);
  });
  return learning_rate_at(s_.config.scheduler, s_.config.optimizer.lr, progress.step, s_.total_steps, progress.lr_scale);
}

bool Trainer::State::FitLoop::stops_before_step(bool fed, StepRows& rows) {
  if (!s_.ranks.distributed()) return !fed;
  // Each rank's callbacks decide for it (its own clock, for train.max_time); one that asks to stop
  // ends the run for all, for the same reason.
  const int asked = pending_ ? static_cast<int>(*pending_) + 1 : 0;
  const auto agreed = s_.ranks.agree(s_.train_guard->micro_batch(), core::stop_requested(), asked, rows.global, s_.progress.step);
  if (agreed.stop) {  // a signal is the stronger reason: the run resumes
    result_.interrupted = true;
    return true;
  }
  if (agreed.end_request > 0) {
    const auto reason = static_cast<StopReason>(agreed.end_request - 1);
    if (pending_ != reason) stop_why_ = "another rank's callback asked to stop";
    stop_ = reason;
    pending_.reset();
    time_up_agreed_ = reason == StopReason::time_limit;
    return true;
  }
  if (agreed.rows == 0) return true;  // the epoch is over on every rank
  s_.agreed_micro_batch = agreed.micro_batch;
  rows = {agreed.rows, agreed.largest_rows};
  return false;
}

std::optional<LossWindow> Trainer::State::FitLoop::window_loss(double mean_loss) const {
  if (window_.steps == 0) return std::nullopt;
  const auto step = s_.progress.step;
  return LossWindow{mean_loss, step - window_.steps + 1, step, s_.scaler->skipped_steps() - window_.skipped_before};
}

// Whether step `step` (1-based) gets a step line: every logging.every_steps, the last, and the
// first this fit() runs (`first`).
bool Trainer::State::FitLoop::logs_step(std::int64_t step, bool first) const {
  return step % s_.config.logging.every_steps == 0 || step == s_.total_steps || first;
}

// The step line: the window's means, summed over ranks; then a new window.
void Trainer::State::FitLoop::report_steps(double lr) {
  auto& progress = s_.progress;
  StepMetrics m;
  m.step = progress.step;
  m.epoch = progress.epoch;
  const auto window = s_.ranks.sum({window_.loss.item<double>(), static_cast<double>(window_.samples)},  // syncs the device
                                   "the sum of the logged loss at step " + std::to_string(progress.step));
  m.loss = window[0] / static_cast<double>(window_.steps);
  double window_seconds = seconds_since(window_.start) - window_.paused_seconds;
  double window_samples = window[1];
  // Set-up steps are left out, unless the window holds nothing else (the first step's line).
  const bool setup_apart = window_.setup_steps < window_.steps && window_.setup_seconds < window_seconds;
  if (setup_apart) {
    window_seconds -= window_.setup_seconds;
    if (window_.samples > 0)
      window_samples *= static_cast<double>(window_.samples - window_.setup_samples) / static_cast<double>(window_.samples);
  }
  m.samples_per_second = window_samples / window_seconds;
  m.data_seconds = window_.data_seconds / static_cast<double>(window_.steps);
  m.lr = lr;
  m.loss_scale = s_.scaler->scale_value();
  m.skipped_steps = s_.scaler->skipped_steps();
  // The ETA keeps the pauses (the validations and checkpoints still ahead take time too), not the
  // one-time set-up, at the pace of the window's other steps.
  const auto paced_steps = static_cast<double>(window_.steps - (setup_apart ? window_.setup_steps : 0));
  const double per_step = (window_seconds + window_.paused_seconds) / paced_steps;
  m.compute_seconds = (window_seconds - window_.data_seconds) / paced_steps;
  m.eta_seconds = static_cast<double>(s_.total_steps - progress.step) * per_step;
  if (s_.config.train.max_time > 0) m.eta_seconds = std::min(m.eta_seconds, std::max(0.0, s_.config.train.max_time - trained_seconds()));
  const auto memory = memory::memory_figures(s_.device, /*with_limit=*/false);  // no /proc or driver call per report
  m.memory_allocated = memory.allocated;
  m.memory_reserved = memory.reserved;
  m.memory_peak = memory.peak;
  m.micro_batch = s_.train_guard->micro_batch();
  m.oom_events = s_.oom_events();
  if (window_.grad_norm.defined()) m.grad_norm = window_.grad_norm.item<double>();  // the same on every rank
  // The callbacks see the line first: one that stops a diverged run keeps its nan out of the records.
  const auto loss = *window_loss(m.loss);
  each_callback([&](Callback& c) { c.on_log(*this, m, loss); });
  s_.reporter.step(m);
  result_.last_loss = m.loss;
  window_.loss.zero_();
  window_.grad_norm = at::Tensor();
  window_.steps = window_.samples = 0;
  window_.skipped_before = s_.scaler->skipped_steps();
  window_.data_seconds = window_.paused_seconds = window_.setup_seconds = 0;
  window_.setup_samples = window_.setup_steps = 0;
  window_.start = Clock::now();
}

// Validation, then the callbacks (best.pt, early stopping, the plateau schedule, checkpoints).
void Trainer::State::FitLoop::end_epoch(std::optional<double> train_loss, double epoch_seconds) {
  auto& progress = s_.progress;
  EpochMetrics metrics;
  paused([&] {
    metrics = s_.validate(progress.epoch, train_loss, epoch_seconds);
    each_callback([&](Callback& c) { c.on_validation(*this, metrics); });
  });
  s_.reporter.epoch(metrics);
  result_.last_epoch = metrics;
  ++progress.epoch;
  progress.position = 0;
  each_callback([&](Callback& c) { c.on_validation_end(*this, metrics); });
  each_callback([&](Callback& c) { c.on_epoch_end(*this, metrics); });
  write_due_checkpoints();
}

}  // namespace gputrain::train
