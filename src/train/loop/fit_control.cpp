// Trainer::State::FitLoop as the callbacks' RunControl: checkpoints, best.pt, the weights, and
// what a finished fit() reports.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <unordered_map>

#include "fit_loop.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "train/step/optimizer_shards.hpp"

namespace gputrain::train {

bool Trainer::State::FitLoop::loss_scaling() const { return s_.scaler->enabled(); }

std::string Trainer::State::FitLoop::best_path() const { return s_.store->best_path(); }

void Trainer::State::FitLoop::load_weights(const std::string& checkpoint) { load_checkpoint_weights(checkpoint, *s_.model, s_.device); }

Model& Trainer::State::FitLoop::model() { return *s_.model; }

// The weights are swapped in tensor by tensor and swapped back after, so no second copy of the
// model is held (a spare of one tensor at a time).
EpochMetrics Trainer::State::FitLoop::validate_with(const NamedTensors& weights) {
  const auto own = s_.model->named_state();
  if (weights.size() != own.size())
    throw Error("validate_with: " + std::to_string(weights.size()) + " tensors given, the model has " + std::to_string(own.size()),
                "pass the tensors of the model's named_state(), in its order");
  const auto swap_all = [&] {
    at::NoGradGuard no_grad;
    for (std::size_t i = 0; i < own.size(); ++i) {
      auto live = own[i].second.detach();
      const auto spare = live.clone();
      live.copy_(weights[i].second);
      weights[i].second.detach().copy_(spare);
    }
  };
  swap_all();
  try {
    auto metrics = s_.validate(s_.progress.epoch, std::nullopt, 0);
    swap_all();
    return metrics;
  } catch (...) {
    swap_all();
    throw;
  }
}

NamedTensors Trainer::State::FitLoop::gradients() {
  std::unordered_map<const void*, std::string> names;
  for (const auto& [name, t] : s_.model->named_state()) names.emplace(t.unsafeGetTensorImpl(), name);
  const auto& kept = s_.readout.gradients;
  NamedTensors out;
  for (std::size_t i = 0; i < s_.params.size(); ++i) {
    // An eager step left a copy; a replayed CUDA graph, the ones in its pool.
    const auto gradient = i < kept.size() ? kept[i] : s_.params[i].grad();
    const auto name = names.find(s_.params[i].unsafeGetTensorImpl());
    if (gradient.defined() && name != names.end()) out.emplace_back(name->second, gradient);
  }
  return out;
}

std::string Trainer::State::FitLoop::save_weights(const std::string& file_name, const NamedTensors& tensors) {
  return s_.write_weights(file_name, tensors);
}

void Trainer::State::FitLoop::collect_callback_states() {
  s_.progress.callbacks.clear();
  s_.progress.callback_tensors.clear();
  for (const auto& callback : s_.callbacks) {
    s_.progress.callbacks[callback->name()] = callback->state_dict();
    if (auto tensors = callback->tensor_state(); !tensors.empty()) s_.progress.callback_tensors[callback->name()] = std::move(tensors);
  }
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
  const FullOptimizerState full(s_.shards.get());
  if (!writer()) {  // every rank holds the same state; rank 0's file serves all on resume
    s_.last_saved_step = progress.step;
    return;
  }
  s_.reporter.working_on("writing the checkpoint of step " + std::to_string(progress.step));
  s_.last_checkpoint = s_.refused_saves_explained([&] { return s_.store->save(s_.parts(), progress, s_.config_yaml); });
  s_.last_saved_step = progress.step;
  note("checkpoint written: " + s_.last_checkpoint);
}

void Trainer::State::FitLoop::refuse_unread_epoch(std::int64_t start_position, std::int64_t to_read, std::int64_t rows) {
  const auto epoch = std::to_string(s_.progress.epoch + 1);
  const auto sums = s_.ranks.sum({static_cast<double>(to_read), static_cast<double>(rows)}, "the samples epoch " + epoch + " read");
  if (sums[0] == 0 || sums[1] > 0) return;
  s_.progress.position = start_position;  // none of them was trained on: a resume reads them all
  write_checkpoint();                     // the steps since the last checkpoint, if any
  const auto& path = s_.config.data.path;
  throw Error("epoch " + epoch + " read none of its " + core::counted(static_cast<std::int64_t>(sums[0]), "sample") +
                  ": each was unreadable (named above), as when the data is moved, deleted or its file system unmounted during a run",
              "put the data back" + (path.empty() ? std::string() : " at data.path ('" + path + "')") + ", then run the same command: " +
                  (s_.last_checkpoint.empty() ? std::string("it starts over") : "it resumes from " + s_.last_checkpoint));
}

void Trainer::State::FitLoop::write_best() {
  paused([&] {
    s_.progress.trained_seconds = trained_seconds();
    collect_callback_states();
    const FullOptimizerState full(s_.shards.get());
    if (!writer()) return;
    s_.reporter.working_on("writing best.pt");
    s_.refused_saves_explained([&] { return s_.store->save_best(s_.parts(), s_.progress, s_.config_yaml); });
  });
}

void Trainer::State::FitLoop::finish() { finish(/*together=*/true); }

void Trainer::State::FitLoop::finish(bool together) {
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
  s.fill_run_figures(result, totals_, together);
}

void Trainer::State::FitLoop::add_record(const MetricRecord& record) {
  s_.reporter.add(record);  // other ranks have no sinks
  if (passing_record_) return;
  passing_record_ = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{passing_record_};
  each_callback([&](Callback& c) { c.on_record(*this, record); });
}

void Trainer::State::FitLoop::end_callbacks() {
  if (stop_ == StopReason::request && !result_.interrupted && writer()) record("stopped: " + stop_why_);
  each_callback([&](Callback& c) { c.on_fit_end(*this, result_); });
}

void Trainer::State::FitLoop::close_callbacks() {
  each_callback([&](Callback& c) { c.on_fit_closed(*this, result_); });
}

void Trainer::State::FitLoop::fail(const std::exception& error) {
  fail_callbacks(error.what());
  s_.reporter.fail(error);
}

void Trainer::State::FitLoop::fail_callbacks(const std::string& error) noexcept {
  try {
    finish(/*together=*/false);
  } catch (...) {  // the figures are what the report holds; the run's error still gets said
  }
  result_.error = error;
  for (auto& callback : s_.callbacks) {
    try {
      callback->on_fit_failed(*this, result_);
    } catch (...) {
    }
  }
}

}  // namespace gputrain::train
