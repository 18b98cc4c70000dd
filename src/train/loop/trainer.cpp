// Trainer's run: the training step, checkpoints, and fit()'s result. Set-up is in
// trainer_setup.cpp, the step loop in epoch_loop.cpp, the validation pass in validation.cpp.
#include "gputrain/train/trainer.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "gputrain/core/duration.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "train/config/config_schema.hpp"
#include "train/loop/callbacks/early_stop.hpp"
#include "train/report/human_lines.hpp"
#include "train/step/step_failures.hpp"
#include "trainer_state.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

// model.safetensors says what it needs to be used without the run folder: the config that built
// the model (config.yaml's text, and each model.* key on its own), the inputs' shape and columns
// in order, the class names, and the standardisation figures to apply to inputs and to undo on
// outputs. Lists are JSON; docs/examples/predict.py reads them.
std::map<std::string, std::string> weights_metadata(const Config& config, const RunData& data, const std::string& model_name) {
  const auto& transform = data.transform;
  std::map<std::string, std::string> metadata{{"format", "pt"}, {"model", model_name}, {"config", to_yaml(config)},
                                              {"data.task", config.data.task},
                                              {"data.shape", nlohmann::json(config.data.shape).dump()}};
  for (const auto& field : schema())  // what builds the model, key by key: a reader needs no YAML parser
    if (field.key.rfind("model.", 0) == 0) metadata[field.key] = value_text(field.show(config));
  if (!data.sources.feature_names.empty()) {  // a CSV: its feature and label columns by name
    metadata["data.features"] = nlohmann::json(data.sources.feature_names).dump();
    metadata["data.labels"] = nlohmann::json(config.data.labels).dump();
  }
  if (!data.sources.categories.empty()) {  // {"Sex": ["female", "male"]}: input "Sex=male" is 1 where the cell is "male"
    nlohmann::json categories = nlohmann::json::object();
    for (const auto& column : data.sources.categories) categories[column.column] = column.values;
    metadata["data.categories"] = categories.dump();
  }
  if (!data.sources.class_names.empty()) metadata["data.class_names"] = nlohmann::json(data.sources.class_names).dump();
  const auto list = [](const std::vector<double>& values) {
    std::ostringstream text;
    text.precision(9);
    text << "[";
    for (std::size_t i = 0; i < values.size(); ++i) text << (i ? ", " : "") << values[i];
    return text.str() + "]";
  };
  if (!config.data.mean.empty()) {
    metadata["data.mean"] = list(config.data.mean);
    metadata["data.std"] = list(config.data.std);
  }
  if (!transform.target_mean.empty()) {  // outputs are standardised: y = output * target_std + target_mean
    metadata["data.target_mean"] = list(transform.target_mean);
    metadata["data.target_std"] = list(transform.target_std);
  }
  return metadata;
}

}  // namespace

// One optimizer step over `batch` (this rank's share of `global_rows` samples; nullptr when the
// rank has none left this epoch). The OOM guard may split it into smaller micro-batches; the loss
// weighting in accumulate_gradients keeps the gradient that of the whole (global) batch.
at::Tensor Trainer::State::train_step(const data::Batch* batch, std::int64_t global_rows) {
  auto p = step_parts();
  p.global_rows = global_rows;
  at::Tensor step_loss;
  if (sync) sync->begin_step(progress.step);
  if (batch)
    train_guard->run(
        progress.step, batch->size(), [&](std::int64_t micro) { step_loss = accumulate_gradients(p, *batch, micro); },
        [&] {
          optimizer->zero_grad(/*set_to_none=*/true);
          if (sync) sync->discard();
        });
  report_oom_events(*train_guard);
  if (sync) sync->finish();
  try {
    apply_gradients(p);
  } catch (const c10::OutOfMemoryError& e) {
    // Past the micro-batches nothing scales with the batch: parameters, gradients and optimizer
    // state alone do not fit, and the parameters may be half-updated, so no checkpoint is written.
    throw Error("out of memory in the optimizer step (step " + std::to_string(progress.step + 1) +
                    "): the parameters, gradients and optimizer state alone do not fit; " +
                    memory::describe(memory::memory_figures(device)) + ". The allocator said: " + e.what_without_backtrace(),
                "use optimizer.name: sgd (less state than adam/adamw), a smaller model, or allow more memory (device.max_memory); "
                "the last periodic checkpoint is intact");
  }
  return step_loss.defined() ? step_loss : at::zeros({}, at::TensorOptions().device(device));  // a rank with no samples
}

// A checkpoint the disk refused (full, over quota) ends the run: training on would leave every
// later step unsaved. The system's reason and fix are kept; added is where the run goes on from
// once that is fixed, since a failed save leaves the checkpoints before it as they were.
std::string Trainer::State::refused_saves_explained(const std::function<std::string()>& save) {
  try {
    return save();
  } catch (const Error& e) {
    const auto latest = store->latest();
    std::string on_from;
    if (!latest)
      on_from = "no checkpoint of this run is on disk yet, so it will start over";
    else if (config.checkpoint.resume == "auto")
      on_from = "then the same command resumes from " + *latest + ", the newest checkpoint (checkpoint.resume: auto)";
    else
      on_from = "then set checkpoint.resume: " + *latest + " to go on from the newest checkpoint";
    throw Error(std::string(e.what()) + " (saving the checkpoint of step " + std::to_string(progress.step) + ")",
                e.remedy() + "; " + on_from, e.exit_code());
  }
}

void Trainer::State::checkpoint() {
  // Ranks stop together once one rank's clock is up; this rank's may be a little short of the
  // limit, and a checkpoint that said so would have a rerun take one more step. So the step's
  // checkpoint is written again when the time limit ended the run after it was saved (at an
  // epoch's end or checkpoint.every_steps, just before the ranks agreed the time was up).
  if (progress.step == last_saved_step && last_saved_time_limit == time_limit_agreed) return;
  progress.trained_seconds = trained_seconds();
  if (time_limit_agreed) progress.trained_seconds = std::max(progress.trained_seconds, config.train.max_time);
  last_saved_time_limit = time_limit_agreed;
  if (!ranks.writer()) {  // every rank holds the same state; rank 0's file serves all on resume
    last_saved_step = progress.step;
    return;
  }
  working_on("writing the checkpoint of step " + std::to_string(progress.step));
  last_checkpoint = refused_saves_explained([&] { return store->save(parts(), progress, config_yaml); });
  last_saved_step = progress.step;
  note("checkpoint written: " + last_checkpoint);
}

Trainer::Trainer(Config config, TrainerOptions options) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  state_->options = std::move(options);
  state_->config_yaml = to_yaml(state_->config);
  try {
    state_->setup();
    if (!state_->evaluating()) {
      state_->resume();
      state_->write_config_file();
    }
  } catch (const c10::OutOfMemoryError& e) {
    throw Error("out of memory before the first step, while placing the data, the model and its optimizer on " +
                    state_->device.str() + ": " + memory::describe(memory::memory_figures(state_->device)) +
                    ". The allocator said: " + e.what_without_backtrace(),
                "allow more memory (device.max_memory), use fewer samples (data.samples) or a smaller model");
  }
}

Trainer::~Trainer() = default;

Model& Trainer::model() { return *state_->model; }

std::string Trainer::device() const { return state_->device.str(); }

// The epochs and steps of a run, until the step budget or a stop request; fit() handles the end.
// A run that stopped early ends on its best epoch's weights, not on the `patience` epochs that did
// no better: best.pt holds them (kept by the same figure early stopping watches). The run's last
// checkpoint, written before, keeps the state it stopped in.
void Trainer::State::restore_best_weights(FitResult& result, const std::string& metric) {
  const auto best = store->best_path();
  if (!fs::exists(best) || progress.best_epoch == 0) {  // best.pt deleted by hand, or written before epochs were recorded
    note("stopped early: " + result.early_stop_reason + "; " + best + " is missing, so model.safetensors holds the last epoch's weights");
    return;
  }
  try {
    load_checkpoint_weights(best, *model, device);
  } catch (const CheckpointDamaged& e) {  // refused before any weight was loaded: the model holds the last epoch's
    note("stopped early: " + result.early_stop_reason + "; " + e.what() + ", so model.safetensors holds the last epoch's weights");
    return;
  }
  result.weights_epoch = progress.best_epoch;
  result.weights_metric = progress.best_metric;
  // For the record: the caller reports it from FitResult, on the console.
  for (auto& sink : sinks)
    sink->on_outcome("stopped early: " + result.early_stop_reason + "; model.safetensors holds epoch " +
                     std::to_string(progress.best_epoch) + "'s weights (" + metric + " " +
                     metric_text(metric, progress.best_metric.value_or(0.0)) + ", from " + best + ")");
}

FitResult Trainer::fit() {
  auto& s = *state_;
  if (s.evaluating()) throw std::logic_error("Trainer::fit() on a trainer set up for evaluate() (TrainerOptions::evaluate_only)");
  auto& progress = s.progress;
  s.lock_folders();  // again, when this trainer already ran once
  // The run's folders are free for the next run once this one has returned, however it returns.
  struct ReleaseFolders {
    State& s;
    ~ReleaseFolders() { s.folder_locks.clear(); }
  } release_folders{s};
  FitResult result;
  result.run_dir = s.config.logging.dir;
  result.total_steps = s.total_steps;
  result.start_step = progress.step;
  s.make_sinks(progress.step);
  s.trained_before = progress.trained_seconds;
  s.fit_start = Clock::now();
  const double max_time = s.config.train.max_time;
  const auto early_stop = EarlyStopRule::from(s.config);
  if (stopped_early(early_stop, progress) && progress.step < s.total_steps)
    s.note("nothing left to train: this run stopped early after epoch " + std::to_string(progress.epoch) + ", as " +
           early_stop_reason(early_stop, progress) + "; to train on, raise train.early_stop_patience (0 turns early stopping off)");
  else if (progress.step > 0 && progress.step >= s.total_steps)
    s.note("nothing left to train: " +
           (progress.step == s.total_steps ? "this run already finished its " + core::counted(s.total_steps, "step")
                                           : "the checkpoint is at step " + std::to_string(progress.step) + ", past this run's " +
                                                 core::counted(s.total_steps, "step")) +
           "; to train again set checkpoint.resume: never or another logging.dir, to train longer raise "
           "train.epochs or train.max_steps");
  else if (max_time > 0 && s.trained_before >= max_time)
    s.note("nothing left to train: this run has trained for " + core::duration_text(std::round(s.trained_before)) +
           ", its train.max_time of " + core::duration_text(max_time) + "; to train on, raise train.max_time (none: no limit)");
  else if (max_time > 0 && s.trained_before > 0)
    s.note("train.max_time " + core::duration_text(max_time) + ": " + core::duration_text(std::round(s.trained_before)) +
           " of it used before this resume, " + core::duration_text(std::round(max_time - s.trained_before)) + " left");

  RunTotals totals;
  try {
    s.run_epochs(result, totals);
    s.report_skipped();
    s.checkpoint();  // the state the run ends in, whether finished or stopped
  } catch (const memory::OomExhaustedError& e) {
    // The failed step changed nothing (its partial gradients were dropped): save where the run
    // stands, so it resumes here once the memory settings are changed.
    s.report_oom_events(*s.train_guard);
    s.report_oom_events(*s.val_guard);
    s.checkpoint();
    s.note("stopped: out of memory with no smaller micro-batch allowed; resume from " + s.last_checkpoint +
           " after changing the memory settings");
    s.end_with_failure(e);
    throw;
  } catch (const c10::Error& e) {
    // LibTorch's own errors carry a C++ backtrace users cannot act on: keep its message, say
    // which step failed and, where the cause is known, what to change.
    const Error error("step " + std::to_string(progress.step + 1) + " failed in LibTorch: " + e.what_without_backtrace(),
                      remedy_for_step_failure(e.what_without_backtrace(), s.train_size, s.effective_batch));
    s.end_with_failure(error);
    throw error;
  } catch (const std::exception& e) {
    s.end_with_failure(e);
    throw;
  } catch (...) {
    for (auto& sink : s.sinks) sink->on_end();
    throw;
  }
  // Time that ran out with the last step done changed nothing: the run is simply finished.
  result.time_limit_reached = result.time_limit_reached && !result.interrupted && progress.step < s.total_steps;
  result.last_checkpoint = s.last_checkpoint;
  result.trained_seconds = progress.trained_seconds = s.trained_seconds();
  result.steps = progress.step;
  result.epochs_done = progress.epoch;
  const bool ended_early = !result.interrupted && stopped_early(early_stop, progress);
  if (ended_early) result.early_stop_reason = early_stop_reason(early_stop, progress);
  result.has_validation = s.val_size > 0;
  result.show_balanced_accuracy = s.shows_balanced_accuracy();
  result.steps_per_epoch = s.steps_per_epoch;
  if (!result.interrupted && progress.position > 0) {
    result.ended_inside_epoch = progress.epoch + 1;
    // The position counts this rank's samples, as steps_per_epoch does.
    result.steps_into_epoch = (progress.position + s.effective_batch - 1) / s.effective_batch;
  }
  result.skipped_steps = s.scaler->skipped_steps();
  result.samples = totals.samples;
  result.oom_events = s.oom_events();
  result.batch_size = s.micro_batch;
  result.micro_batch = s.train_guard->micro_batch();
  result.model = s.model->name();
  result.data_cache = data::to_string(s.placement.plan.mode);
  result.data_load_seconds = s.placement.load_seconds;
  const auto& layout = s.data.sources.train->layout();
  result.sample_bytes = layout.input_bytes() + layout.target_bytes();
  result.skipped_samples = static_cast<std::int64_t>(s.skipped_reported);
  result.run_seconds = seconds_since(totals.start);
  const double step_seconds = result.run_seconds - totals.paused_seconds;
  result.world_size = s.ranks.world_size();
  result.rank = s.ranks.rank();
  if (s.sync) {
    const auto figures = s.sync->figures();
    result.gradient_buckets = figures.buckets;
    result.buckets_sent_in_backward = figures.launched_in_backward;
    result.gradient_wait_seconds = figures.wait_seconds;
    result.communication_seconds = figures.communication_seconds;
    result.communication_hidden_share = figures.hidden_share();
  }
  const double all_samples = s.ranks.sum({static_cast<double>(totals.samples)}, "the sum of the samples trained on")[0];
  if (totals.steps > 0) {
    result.samples_per_second = all_samples / step_seconds;
    result.data_stall_percent = 100.0 * totals.data_seconds / step_seconds;
    result.step_seconds = step_seconds;
    result.data_seconds = totals.data_seconds;
  }
  if (s.ranks.writer()) {
    const auto advice = data_stall_advice(result.data_stall_percent, totals.steps, result.data_cache);
    if (!advice.empty()) s.note(advice);
    // Where the classes are unbalanced or weighted, how each of them fares.
    if (result.show_balanced_accuracy && result.last_epoch) {
      const auto per_class = class_report_line(*result.last_epoch, s.data.sources.class_names,
                                               "val per class after epoch " + std::to_string(result.last_epoch->epoch + 1));
      if (!per_class.empty()) s.note(per_class);
    }
  }
  if (result.interrupted) {
    for (auto& sink : s.sinks) sink->on_outcome("interrupted after step " + std::to_string(progress.step) + "; checkpoint " + result.last_checkpoint);
  } else if (s.ranks.writer()) {
    if (result.time_limit_reached)
      for (auto& sink : s.sinks)
        sink->on_outcome("stopped at train.max_time " + core::duration_text(max_time) + " after step " + std::to_string(progress.step) +
                         " of " + std::to_string(s.total_steps) + "; checkpoint " + result.last_checkpoint);
    if (ended_early) s.restore_best_weights(result, early_stop.metric);
    result.weights_path = (fs::path(s.config.logging.dir) / "model.safetensors").string();
    s.working_on("writing " + result.weights_path);
    try {
      data::write_safetensors(result.weights_path, s.model->named_state(), weights_metadata(s.config, s.data, s.model->name()));
    } catch (const Error& e) {  // the disk refused it; the last checkpoint, written just before, holds the same weights
      const Error error(e.what(), e.remedy() + "; the run's final state is saved (" + s.last_checkpoint + "), so the same command" +
                                      (s.config.checkpoint.resume == "auto" ? "" : " with checkpoint.resume: auto") +
                                      " then writes model.safetensors without training again",
                        e.exit_code());
      s.end_with_failure(error);
      throw error;
    }
    for (auto& sink : s.sinks) sink->on_outcome("final weights: " + result.weights_path);
  }
  for (auto& sink : s.sinks) sink->on_end();
  return result;
}

}  // namespace gputrain::train
