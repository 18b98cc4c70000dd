// Trainer::State::FitLoop as the callbacks' RunControl: checkpoints, best.pt, the weights, and
// what a finished fit() reports.
#include <algorithm>

#include "fit_loop.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/checkpoint.hpp"

namespace gputrain::train {

bool Trainer::State::FitLoop::loss_scaling() const { return s_.scaler->enabled(); }

std::string Trainer::State::FitLoop::best_path() const { return s_.store->best_path(); }

void Trainer::State::FitLoop::load_weights(const std::string& checkpoint) { load_checkpoint_weights(checkpoint, *s_.model, s_.device); }

void Trainer::State::FitLoop::collect_callback_states() {
  s_.progress.callbacks.clear();
  for (const auto& callback : s_.callbacks) s_.progress.callbacks[callback->name()] = callback->state_dict();
}

void Trainer::State::FitLoop::write_due_checkpoints() {
  if (best_due_) {
    best_due_ = false;
    write_best();
  }
  if (!checkpoint_due_) return;
  checkpoint_due_ = false;
  // The steps since the last step line must be sound too: the callbacks see their loss first.
  std::optional<LossWindow> window;
  if (window_.steps > 0)
    window = window_loss(s_.ranks.sum({window_.loss.item<double>()},
                                      "the sum of the loss before a checkpoint at step " + std::to_string(s_.progress.step))[0] /
                         static_cast<double>(window_.steps));
  each_callback([&](Callback& c) { c.on_before_checkpoint(*this, window ? &*window : nullptr); });
  paused([&] { write_checkpoint(); });
}

void Trainer::State::FitLoop::write_checkpoint() {
  auto& progress = s_.progress;
  // Ranks stop together once one rank's clock is up; this rank's may be a little short of the
  // limit, and a checkpoint that said so would have a rerun take one more step. So the step's
  // checkpoint is written again when the time limit ended the run after it was saved (at an
  // epoch's end or checkpoint.every_steps, just before the ranks agreed the time was up).
  if (progress.step == s_.last_saved_step && last_saved_time_limit_ == time_up_agreed_) return;
  progress.trained_seconds = trained_seconds();
  if (time_up_agreed_) progress.trained_seconds = std::max(progress.trained_seconds, s_.config.train.max_time);
  last_saved_time_limit_ = time_up_agreed_;
  collect_callback_states();
  if (!writer()) {  // every rank holds the same state; rank 0's file serves all on resume
    s_.last_saved_step = progress.step;
    return;
  }
  s_.reporter.working_on("writing the checkpoint of step " + std::to_string(progress.step));
  s_.last_checkpoint = s_.refused_saves_explained([&] { return s_.store->save(s_.parts(), progress, s_.config_yaml); });
  s_.last_saved_step = progress.step;
  note("checkpoint written: " + s_.last_checkpoint);
}

void Trainer::State::FitLoop::write_best() {
  paused([&] {
    s_.progress.trained_seconds = trained_seconds();
    collect_callback_states();
    s_.reporter.working_on("writing best.pt");
    s_.refused_saves_explained([&] { return s_.store->save_best(s_.parts(), s_.progress, s_.config_yaml); });
  });
}

void Trainer::State::FitLoop::finish() {
  auto& s = s_;
  auto& progress = s.progress;
  auto& result = result_;
  // Time that ran out with the last step done changed nothing: the run is simply finished.
  result.time_limit_reached = stop_ == StopReason::time_limit && !result.interrupted && progress.step < s.total_steps;
  if (stop_ == StopReason::early_stop && !result.interrupted) result.early_stop_reason = stop_why_;
  result.last_checkpoint = s.last_checkpoint;
  result.trained_seconds = progress.trained_seconds = trained_seconds();
  result.steps = progress.step;
  result.epochs_done = progress.epoch;
  result.has_validation = s.val_size > 0;
  result.show_balanced_accuracy = s.shows_balanced_accuracy();
  result.steps_per_epoch = s.steps_per_epoch;
  if (!result.interrupted && progress.position > 0) {
    result.ended_inside_epoch = progress.epoch + 1;
    // The position counts this rank's samples, as steps_per_epoch does.
    result.steps_into_epoch = (progress.position + s.effective_batch - 1) / s.effective_batch;
  }
  result.skipped_steps = s.scaler->skipped_steps();
  result.samples = totals_.samples;
  result.oom_events = s.oom_events();
  result.batch_size = s.micro_batch;
  result.micro_batch = s.train_guard->micro_batch();
  result.run_seconds = seconds_since(totals_.start);
  s.fill_run_figures(result, totals_);
}

void Trainer::State::FitLoop::end_callbacks() {
  if (stop_ == StopReason::request && !result_.interrupted && writer()) record("stopped: " + stop_why_);
  each_callback([&](Callback& c) { c.on_fit_end(*this, result_); });
}

}  // namespace gputrain::train
