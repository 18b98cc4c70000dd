// Trainer's run: fit() around its loop (fit_loop.cpp), what a finished run reports, and its final
// weights. Set-up is in setup/trainer_setup.cpp, resuming in resume.cpp, validation in validation.cpp.
#include "gputrain/train/trainer.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/jit_exception.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/json_text.hpp"
#include "fit_loop.hpp"
#include "gputrain/core/duration.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "train/checkpoint/rng_state.hpp"
#include "train/config/config_schema.hpp"
#include "train/loop/callbacks/builtin_callbacks.hpp"
#include "train/report/human_lines.hpp"
#include "train/step/step_failures.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

// logging.alerts.communication_error (the seed's "any NCCL error"; MPI's too): the run ends with the
// error, and before it says so as an alert, which is what a watcher of metrics.jsonl looks for.
void alert_communication_error(Reporter& reporter, const dist::CommunicationError& e, std::int64_t step) {
  const std::string message = core::first_line(e.what()) + "; " + e.remedy();
  reporter.note("warning: alert communication_error: " + message);
  reporter.add(MetricRecord{"alert", step, {}, {{"alert", "communication_error"}, {"message", message}}});
}

// model.safetensors says what it needs to be used without the run folder: the config that built
// the model (config.yaml's text, and each model.* key on its own), the inputs' shape and columns
// in order, the class names, and the standardisation figures to apply to inputs and to undo on
// outputs. Lists are JSON; docs/examples/predict.py reads them.
std::map<std::string, std::string> weights_metadata(const Config& config, const RunData& data, const std::string& model_name) {
  const auto& transform = data.transform;
  std::map<std::string, std::string> metadata{{"format", "pt"},
                                              {"model", model_name},
                                              {"config", to_yaml(config)},
                                              {"data.task", config.data.task},
                                              {"data.shape", core::json_text(nlohmann::json(config.data.shape))}};
  for (const auto& field : schema())  // what builds the model, key by key: a reader needs no YAML parser
    if (field.key.rfind("model.", 0) == 0) metadata[field.key] = value_text(field.show(config));
  if (!data.sources.feature_names.empty()) {  // a CSV: its feature and label columns by name
    metadata["data.features"] = core::json_text(nlohmann::json(data.sources.feature_names));
    metadata["data.labels"] = core::json_text(nlohmann::json(config.data.labels));
  }
  if (!data.sources.categories.empty()) {  // {"Sex": ["female", "male"]}: input "Sex=male" is 1 where the cell is "male"
    nlohmann::json categories = nlohmann::json::object();
    for (const auto& column : data.sources.categories) categories[column.column] = column.values;
    metadata["data.categories"] = core::json_text(categories);
  }
  if (!data.sources.fill_values.empty()) {  // data.missing mean or zero: what a missing value of each column becomes
    nlohmann::json fill = nlohmann::json::object();
    for (const auto& [column, value] : data.sources.fill_values) fill[column] = value;
    metadata["data.missing"] = config.data.missing;
    metadata["data.fill_values"] = core::json_text(fill);
  }
  if (!data.sources.class_names.empty()) metadata["data.class_names"] = core::json_text(nlohmann::json(data.sources.class_names));
  const auto& layout = data.sources.train->layout();
  const bool decoded_images = (config.data.source == "image_folder" || config.data.source == "postgres") &&
                              layout.input_dtype == at::kByte && layout.input_shape.size() == 3;
  if (decoded_images) {  // JPEG and PNG files or bytea: how a file becomes a sample (docs/data.md, "Images")
    metadata["data.image_size"] = core::json_text(nlohmann::json(config.data.image_size));
    metadata["data.preprocess"] =
        "Pillow's Image.open, draft('RGB', (width, height)) for a JPEG, convert('RGB'); antialiased bilinear resize to cover "
        "data.image_size, columns then rows, 22-bit fixed point; centre crop; then x / 255 and (x - data.mean) / data.std "
        "(docs/data.md, Images; docs/examples/predict.py's image_sample)";
  }
  for (const auto& [key, value] : data.sources.provenance) metadata[key] = value;  // a database's queries, rows and checksums
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

// A checkpoint the disk refused (full, over quota) ends the run: training on would leave every
// later step unsaved. The system's reason and fix are kept; added is where the run goes on from
// once that is fixed, since a failed save leaves the checkpoints before it as they were.
std::string Trainer::State::refused_saves_explained(const std::function<std::string()>& save) {
  // A folder deleted or replaced under the run: its checkpoints would mix with another run's.
  for (const auto& lock : folder_locks) lock->check_still_held();
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

void Trainer::State::keep_rng_at_setup() {
  cpu_rng_at_setup = rng_state(c10::Device(at::kCPU));
  if (device.is_cuda()) device_rng_at_setup = rng_state(device);
}

// The first fit() draws as though it ran right after its set-up; a later one goes on from there.
void Trainer::State::restore_rng_at_setup() {
  for (auto [on, state] : {std::pair{c10::Device(at::kCPU), &cpu_rng_at_setup}, std::pair{device, &device_rng_at_setup}}) {
    if (!state->defined()) continue;
    set_rng_state(on, *state);
    *state = at::Tensor();
  }
}

Trainer::Trainer(Config config, TrainerOptions options) : state_(std::make_unique<State>()) {
  const auto start = Clock::now();
  state_->config = std::move(config);
  state_->options = std::move(options);
  state_->config_yaml = to_yaml(state_->config);
  state_->phase_start = start;
  try {
    state_->setup();
    if (!state_->evaluating()) {
      state_->callbacks = builtin_callbacks(state_->config);
      for (const auto& callback : state_->options.callbacks) state_->callbacks.push_back(callback);
      state_->choose_step_backend();
      state_->phase_done("callbacks");
      state_->resume();
      state_->phase_done("resume");
      state_->write_config_file();
      state_->keep_rng_at_setup();
      state_->phase_done("config_file");
    }
    for (const auto& [phase, seconds] : state_->setup_phases) state_->setup_seconds += seconds;  // from `start` on, phase by phase
  } catch (const c10::OutOfMemoryError& e) {
    const auto figures = memory::memory_figures(state_->device);
    const auto more = memory::more_memory_remedy(figures);
    throw Error("out of memory before the first step, while placing the data, the model and its optimizer on " + state_->device.str() +
                    ": " + memory::describe(figures) + ". The allocator said: " + e.what_without_backtrace(),
                (more.empty() ? "" : more + ", or ") + "use a smaller model or " +
                    std::string(state_->config.data.source == "synthetic" ? "fewer samples (data.samples)" : "a smaller dataset"));
  }
}

Trainer::~Trainer() = default;

Model& Trainer::model() { return *state_->model; }

std::string Trainer::device() const { return state_->device.str(); }

FitResult Trainer::fit() {
  auto& s = *state_;
  if (s.evaluating()) throw std::logic_error("Trainer::fit() on a trainer set up for evaluate() (TrainerOptions::evaluate_only)");
  s.lock_folders();  // again, when this trainer already ran once
  // The run's folders are free for the next run once this one has returned, however it returns.
  struct ReleaseFolders {
    State& s;
    ~ReleaseFolders() { s.folder_locks.clear(); }
  } release_folders{s};
  FitResult result;
  result.run_dir = s.config.logging.dir;
  result.total_steps = s.total_steps;
  result.start_step = s.progress.step;
  s.restore_rng_at_setup();
  s.open_reporter(s.progress.step);
  State::FitLoop loop(s, result);
  try {
    loop.start();
    loop.run();
    s.report_skipped();
    loop.final_checkpoint();  // the state the run ends in, whether finished or stopped
  } catch (const memory::OomExhaustedError& e) {
    // The failed step changed nothing (its partial gradients were dropped): save where the run
    // stands, so it resumes here once the memory settings are changed.
    s.reporter.oom_events(*s.train_guard);
    s.reporter.oom_events(*s.val_guard);
    // A sharded optimizer state is gathered from every rank, and the others are not here (they
    // wait at the next step): the last checkpoint the ranks wrote together is where to resume.
    if (!s.shards) loop.final_checkpoint();
    s.reporter.note("stopped: out of memory with no smaller micro-batch allowed; resume from " + s.last_checkpoint +
                    " after changing the memory settings");
    loop.fail(e);
    throw;
  } catch (const c10::Error& e) {
    s.report_skipped();  // unreadable samples a streamed batch lost may be the cause: named first
    // LibTorch's own errors carry a C++ backtrace users cannot act on: keep its message, say
    // which step failed and, where the cause is known, what to change.
    const Error error(s.failing_part() + " failed in LibTorch: " + e.what_without_backtrace(),
                      remedy_for_step_failure(e.what_without_backtrace(), s.train_guard->micro_batch()));
    loop.fail(error);
    throw error;
  } catch (const torch::jit::JITException& e) {
    s.reporter.record(e.what());  // the interpreter's two tracebacks: training.log only
    const auto error = module_raised(e.getPythonClassName().value_or(""), e.getOriginalMsg().value_or(core::first_line(e.what())),
                                     s.failing_part(), s.config.model.torchscript);
    loop.fail(error);
    throw error;
  } catch (const dist::CommunicationError& e) {
    if (s.config.logging.alerts.communication_error) alert_communication_error(s.reporter, e, s.progress.step);
    // A peer is gone mid-step: no checkpoint can be written together now, and the last one the
    // ranks wrote is where the run goes on from once every node is back.
    s.reporter.note(s.last_checkpoint.empty()
                        ? "stopped: no checkpoint of this run was written yet, so the same command starts over"
                        : "stopped: resume from " + s.last_checkpoint +
                              ", the last checkpoint all ranks reached (the same command with checkpoint.resume: auto)");
    loop.fail(e);
    throw;
  } catch (const std::exception& e) {
    // A TorchScript module's forward that failed in an operation: its message and code line.
    if (auto error = interpreter_failure(e.what(), s.failing_part(), s.config.model.torchscript, true)) {
      s.reporter.record(e.what());  // the interpreter's two tracebacks: training.log only
      loop.fail(*error);
      throw *error;
    }
    loop.fail(e);
    throw;
  } catch (...) {
    s.reporter.end();
    throw;
  }
  loop.finish();
  s.say_how_it_went(result, loop);
  loop.end_callbacks();
  if (!result.interrupted && s.ranks.writer()) s.write_final_weights(result);
  loop.close_callbacks();
  s.reporter.end();
  return result;
}

// What the run was doing when an error ended it, as the error's first words: "step 5",
// "validation after epoch 2", "writing best.pt".
std::string Trainer::State::failing_part() const {
  const auto& doing = reporter.doing();
  if (doing.empty() || doing.rfind("step ", 0) == 0) return "step " + std::to_string(progress.step + 1);
  return doing;
}

// The figures of FitResult that describe the whole run: the data, the ranks, the speed.
void Trainer::State::fill_run_figures(FitResult& result, const RunTotals& totals, bool together) {
  result.model = model->name();
  result.data_cache = data::to_string(placement.plan.mode);
  result.data_load_seconds = placement.load_seconds;
  const auto& layout = data.sources.train->layout();
  result.sample_bytes = layout.input_bytes() + layout.target_bytes();
  result.skipped_samples = static_cast<std::int64_t>(skipped_reported);
  const double step_seconds = result.run_seconds - totals.paused_seconds;
  result.world_size = ranks.world_size();
  result.rank = ranks.rank();
  result.agreement_seconds = ranks.agreement_seconds();
  result.optimizer_state_bytes = optimizer_state_bytes(*optimizer);
  if (shards) result.parameter_share_seconds = shards->share_seconds();
  if (sync) {
    const auto figures = sync->figures();
    result.gradient_buckets = figures.buckets;
    result.buckets_sent_in_backward = figures.launched_in_backward;
    result.gradient_wait_seconds = figures.wait_seconds;
    result.communication_seconds = figures.communication_seconds;
    result.communication_hidden_share = figures.hidden_share();
  }
  const double all_samples = together ? ranks.sum({static_cast<double>(totals.samples)}, "the sum of the samples trained on")[0]
                                      : static_cast<double>(totals.samples);
  if (totals.steps > 0) {
    result.samples_per_second = all_samples / step_seconds;
    result.data_stall_percent = 100.0 * totals.data_seconds / step_seconds;
    result.step_seconds = step_seconds;
    result.data_seconds = totals.data_seconds;
  }
}

// The notes a finished run ends with (a starved GPU, how each class fares) and, for the record,
// why it ended when it did not simply finish.
void Trainer::State::say_how_it_went(const FitResult& result, const FitLoop& loop) {
  if (ranks.writer()) {
    const auto advice = data_stall_advice(result.data_stall_percent, loop.steps_run(), result.data_cache);
    if (!advice.empty()) reporter.note(advice);
    // Where the classes are unbalanced or weighted, how each of them fares.
    if (result.show_balanced_accuracy && result.last_epoch) {
      const auto per_class = class_report_line(*result.last_epoch, data.sources.class_names,
                                               "val per class after epoch " + std::to_string(result.last_epoch->epoch + 1));
      if (!per_class.empty()) reporter.note(per_class);
    }
  }
  if (result.interrupted) {
    reporter.record("interrupted after step " + std::to_string(progress.step) + "; checkpoint " + result.last_checkpoint);
  } else if (ranks.writer() && result.time_limit_reached) {
    reporter.record("stopped at train.max_time " + core::duration_text(config.train.max_time) + " after step " +
                    std::to_string(progress.step) + " of " + std::to_string(total_steps) + "; checkpoint " + result.last_checkpoint);
  }
}

// <logging.dir>/<file_name> with model.safetensors' metadata, after a run that was not interrupted.
std::string Trainer::State::write_weights(const std::string& file_name, const NamedTensors& tensors) {
  auto path = (fs::path(config.logging.dir) / file_name).string();
  reporter.working_on("writing " + path);
  try {
    data::write_safetensors(path, tensors, weights_metadata(config, data, model->name()));
  } catch (const Error& e) {  // the disk refused it; the last checkpoint, written just before, holds the same weights
    const Error error(e.what(),
                      e.remedy() + "; the run's final state is saved (" + last_checkpoint + "), so the same command" +
                          (config.checkpoint.resume == "auto" ? "" : " with checkpoint.resume: auto") + " then writes " + file_name +
                          " without training again",
                      e.exit_code());
    reporter.fail(error);
    throw error;
  }
  return path;
}

void Trainer::State::write_final_weights(FitResult& result) {
  result.weights_path = write_weights("model.safetensors", model->named_state());
  reporter.record("final weights: " + result.weights_path);
}

}  // namespace gputrain::train
