// Trainer's resume: the checks before anything is restored from a checkpoint (another run's
// folder, another optimizer, another global batch), the restore itself (the callbacks' states
// included), and what a resumed run says about what changed.
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <map>

#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/model_registry.hpp"
#include "train/report/human_lines.hpp"
#include "trainer_state.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

// "train.batch_size: 256, train.grad_accum: 1" as a checkpoint's config has them; for `auto`, the
// batch it found, which the checkpoint's global batch tells.
std::string saved_batch_settings(const YAML::Node& saved, const TrainingProgress& at) {
  const auto text = [&](const char* key) {
    const auto value = saved["train"][key];
    return value && value.IsScalar() ? value.Scalar() : std::string("?");
  };
  const std::string batch = text("batch_size"), accum = text("grad_accum");
  std::string found;
  if (batch == "auto" && accum != "?" && at.world_size > 0)
    found = " (which found " + std::to_string(at.global_batch / at.world_size / std::max<std::int64_t>(1, std::stoll(accum))) + ")";
  return "train.batch_size: " + batch + found + ", train.grad_accum: " + accum;
}

// Whether a config difference ("data.path a.csv -> b.csv") can change a built model's tensors:
// the data keys that decide a sample's shape and the number of outputs.
bool shapes_the_model(const std::string& change) {
  static const char* const kKeys[] = {"data.source ",   "data.task ",    "data.path ",        "data.labels ",
                                      "data.features ", "data.exclude ", "data.categorical ", "data.image_size ",
                                      "data.shape ",    "data.classes ", "data.outputs "};
  for (const char* key : kKeys)
    if (change.rfind(key, 0) == 0) return true;
  return false;
}

// A run folder whose checkpoints were cleaned away, the weights kept, starts over with
// checkpoint.resume: auto: its weights are written over when this run ends, said while they can be kept.
std::string earlier_weights_warning(const std::string& dir, const std::string& checkpoints) {
  const auto weights = fs::path(dir) / "model.safetensors";
  struct stat info {};
  if (::stat(weights.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return "";
  char written[32] = "";
  std::strftime(written, sizeof written, "%Y-%m-%d %H:%M", std::localtime(&info.st_mtime));
  return "warning: " + weights.string() + " holds an earlier run's weights (written " + written + ") and " + checkpoints +
         " holds no checkpoint to resume from: this run starts over and writes its own weights over them when it ends; copy the file " +
         "elsewhere to keep it, or stop now (Ctrl-C) and give this run its own folder (--set logging.dir=runs/NAME)";
}

// Another run's checkpoints in the folder, past the step this run starts from, moved aside: left
// among this run's, the next resume would go on from the newest of either. Said in one note.
std::string set_aside_note(CheckpointStore& store, std::int64_t step, bool with_best, const std::string& why) {
  const auto aside = store.set_aside_after(step, with_best);
  if (aside.names.empty()) return "";
  return "note: " + why + ": the checkpoints " + (step == 0 ? "an earlier run left in " : "past that step in ") + store.dir() + " (" +
         core::join(aside.names) + ", " + core::format_bytes(aside.bytes) + ") are moved to " + aside.folder +
         ", where no resume takes them; delete it to free the space" +
         (aside.dropped.empty() ? "" : " (the set moved aside before it, " + core::join(aside.dropped) + ", is deleted: one is kept)");
}

}  // namespace

void Trainer::State::resume() {
  stamp_progress();
  std::string path;
  if (config.checkpoint.resume == "auto") {
    if (auto latest = store->latest()) path = *latest;
    if (path.empty() && ranks.writer())
      if (const auto warning = earlier_weights_warning(config.logging.dir, config.checkpoint_dir()); !warning.empty())
        reporter.later(warning);
  } else if (config.checkpoint.resume != "never") {
    path = config.checkpoint.resume;
  }
  if (path.empty()) {
    if (config.checkpoint.resume == "never" && ranks.writer())
      if (const auto note = set_aside_note(*store, 0, true, "this run starts over (checkpoint.resume: never)"); !note.empty())
        reporter.later(note);
    return;
  }
  std::string saved_config;
  try {
    progress = load_checkpoint(path, parts(), [&](const std::string& yaml, const TrainingProgress& at) {
      saved_config = yaml;
      refuse_another_run(path, YAML::Load(yaml), at);
    });
  } catch (const Error& e) {
    // A tensor that does not fit names itself; the settings that resized it say why. Other data
    // (a new data.path in a reused logging.dir) resizes the model as surely as model.hidden does.
    std::vector<std::string> model_changes;
    if (!saved_config.empty())
      for (const auto& change : config_differences(saved_config, config_yaml))
        if (change.rfind("model.", 0) == 0 || shapes_the_model(change)) model_changes.push_back(change);
    if (model_changes.empty()) throw;
    const std::string message = std::string(e.what()) + " (the settings that shape the model differ from those " + path +
                                " was written with: " + core::join(model_changes) + ")";
    const bool names_a_folder = e.remedy().find("logging.dir=") != std::string::npos;  // refuse_another_run's does
    const std::string remedy = e.remedy() + (names_a_folder ? "" : "; or give this run its own folder (--set logging.dir=runs/NAME)");
    if (e.exit_code() == ExitCode::usage) throw UsageError(message, remedy);
    throw Error(message, remedy, e.exit_code());
  }
  if (shards) shards->keep_own_state();  // the file holds every parameter's; this rank steps its own
  // Said once the sinks exist (fit() makes them), after the setup's notes: where it resumes, then what changed.
  reporter.later("resumed from " + path + " at step " + std::to_string(progress.step));
  for (auto& callback : callbacks) {
    const auto saved = progress.callbacks.find(callback->name());
    callback->load_state_dict(saved == progress.callbacks.end() ? CallbackState{} : saved->second);
    const auto tensors = progress.callback_tensors.find(callback->name());
    callback->load_tensor_state(tensors == progress.callback_tensors.end() ? NamedTensors{} : tensors->second);
  }
  progress.callback_tensors.clear();  // the callbacks hold them now
  continue_on_this_shape(path);
  last_saved_step = progress.step;
  last_checkpoint = path;
  if (config.checkpoint.resume != "auto" && ranks.writer())  // the newest, with auto: none is past it
    if (const auto note =
            set_aside_note(*store, progress.step, false, "this run goes on from step " + std::to_string(progress.step) + " of " + path);
        !note.empty())
      reporter.later(note);
  if (saved_config != config_yaml) note_config_changes(path, saved_config);
}

// Says which settings a resumed run changed, and when the learning-rate schedule moves with them
// (more epochs stretch a cosine or one-cycle schedule: the rate jumps at the resume step).
void Trainer::State::note_config_changes(const std::string& path, const std::string& saved_yaml) {
  const auto changes = config_differences(saved_yaml, config_yaml);
  constexpr std::size_t kListed = 4;
  const std::string listed = core::join_some(changes, kListed);
  reporter.later("note: the config differs from the one " + path + " was written with" + (changes.empty() ? "" : ": " + listed) +
                 " (both are kept: config.yaml and the checkpoint)");
  try {
    // The rate the checkpoint's run would have used at this step: its config, the same steps per epoch.
    const auto saved = load_config({{}, {}, saved_yaml});
    std::int64_t saved_total = 0;
    if (__builtin_mul_overflow(steps_per_epoch, saved.train.epochs, &saved_total)) saved_total = INT64_MAX;  // bounded by max_steps
    if (saved.train.max_steps > 0) saved_total = std::min(saved_total, saved.train.max_steps);
    const auto saved_rate = [&](std::int64_t step) {
      return learning_rate_at(saved.scheduler, saved.optimizer.lr, step, saved_total, progress.lr_scale);
    };
    const double next = learning_rate_at(config.scheduler, config.optimizer.lr, progress.step, total_steps, progress.lr_scale);
    // Past the run's end (fewer epochs than the checkpoint did) no step runs at the new rate.
    if (progress.step < total_steps && short_number(next) != short_number(saved_rate(progress.step))) {
      std::string line = "note: the learning-rate schedule changes with the config (" + config.scheduler.name + " over " +
                         std::to_string(total_steps) + " steps): step " + std::to_string(progress.step + 1) + " runs at lr " +
                         short_number(next);
      if (progress.step > 0)
        line += ", where step " + std::to_string(progress.step) + " ran at " + short_number(saved_rate(progress.step - 1));
      reporter.later(line);
    }
  } catch (const UsageError&) {
    // A checkpoint from a version whose keys this one does not read: the key list above is all there is.
  }
}

namespace {

// "data.query: 800 rows, checksum 1f...; data.val_query: 200 rows, checksum 2e..." (empty for files).
std::string data_rows_of(const std::map<std::string, std::string>& provenance) {
  std::string out;
  for (const char* side : {"", "val_"}) {
    const auto rows = provenance.find(std::string("data.") + side + "rows");
    if (rows == provenance.end()) continue;
    out += (out.empty() ? "" : "; ") + std::string("data.") + side + "query: " + rows->second + " rows, checksum " +
           provenance.at(std::string("data.") + side + "checksum");
  }
  return out;
}

}  // namespace

// What a step and a position mean in this run; saved with every checkpoint.
void Trainer::State::stamp_progress() {
  progress.global_batch = effective_batch * ranks.world_size();
  progress.world_size = ranks.world_size();
  progress.train_samples = train_size;
  progress.data_rows = data_rows_of(data.sources.provenance);
}

// Checks made before anything is restored from the checkpoint at `path`.
void Trainer::State::refuse_another_run(const std::string& path, const YAML::Node& saved, const TrainingProgress& at) const {
  // Another model in the folder is most likely another run's folder reused by mistake: say that,
  // rather than which tensor or optimizer state does not fit.
  const auto scalar = [&](const char* section, const char* key) {
    const auto node = saved[section][key];
    return node && node.IsScalar() ? node.Scalar() : std::string();
  };
  const auto model_of = [](const std::string& name, const std::string& torchscript) {
    return torchscript.empty() ? name : "model.torchscript " + torchscript;
  };
  // The checkpoint keeps the config as given: its `auto` chose by the data's shape, as this run's did.
  std::string saved_name = scalar("model", "name");
  if (saved_name == "auto") saved_name = model_for_samples(config.data.shape);
  const std::string saved_model = model_of(saved_name, scalar("model", "torchscript"));
  const std::string this_model = model_of(config.model.name, config.model.torchscript);
  if (!scalar("model", "name").empty() && saved_model != this_model)
    throw UsageError(path + " is a checkpoint of " + saved_model + ", and this config trains " + this_model +
                         ": the folder looks like another run's (checkpoint.resume: auto continues from what it finds there)",
                     "give this run its own folder (--set logging.dir=runs/NAME), or set checkpoint.resume: never to start over "
                     "in this one (its checkpoints would then be rotated away)");
  // Another optimizer's state cannot be loaded (LibTorch fails with an internal assert): say which.
  const std::string saved_optimizer = scalar("optimizer", "name");
  if (!saved_optimizer.empty() && saved_optimizer != config.optimizer.name)
    throw UsageError("cannot resume from " + path + ": it holds the state of optimizer.name " + saved_optimizer +
                         ", and this config asks for " + config.optimizer.name,
                     "set optimizer.name: " + saved_optimizer +
                         " to continue that run, or checkpoint.resume: never (or "
                         "another logging.dir) to start a new one");
  // A step of the checkpoint must mean a step of this run: the schedule, the step budget and the
  // epoch's position all count them.
  const std::int64_t global_batch = effective_batch * ranks.world_size();
  if (at.global_batch != 0 && at.global_batch != global_batch)
    throw UsageError(
        path + " was trained with a global batch of " + std::to_string(at.global_batch) + " samples per step (" +
            core::counted(at.world_size, "rank") + "), and this run's is " + std::to_string(micro_batch) + " x " +
            std::to_string(config.train.grad_accum) + " accumulation x " + core::counted(ranks.world_size(), "rank") + " = " +
            std::to_string(global_batch) + ": its steps, schedule and epoch position would mean other samples",
        "resume with train.batch_size x train.grad_accum x ranks = " + std::to_string(at.global_batch) + " (it ran " +
            saved_batch_settings(saved, at) +
            "; on a smaller device the out-of-memory handler splits a batch too large into micro-batches, up to oom.max_halvings), "
            "or start a new run with checkpoint.resume: never or another logging.dir");
}

// The restored progress, carried over to this run. The same global batch on another number of
// ranks is the same run (rank r takes every world-th sample of the epoch's order), so only the
// position, counted in this rank's share, is rescaled.
void Trainer::State::continue_on_this_shape(const std::string& path) {
  const std::int64_t world = ranks.world_size();
  if (progress.world_size != 0 && progress.world_size != world) {
    const auto position = progress.position * progress.world_size / world;
    reporter.later("resuming on " + core::counted(world, "rank") + " a run written by " + core::counted(progress.world_size, "rank") +
                   ", with the same global batch: each rank continues at sample " + std::to_string(position) + " of its share of epoch " +
                   std::to_string(progress.epoch + 1));
    progress.position = position;
  }
  // Files that gained or lost samples since: the epoch order is a permutation of another count,
  // so the rest of this epoch is not the rest of the checkpoint's. Allowed (data gets cleaned up
  // between runs), but said.
  if (progress.train_samples != 0 && progress.train_samples != train_size) {
    const auto old_total = total_steps;
    count_steps_from_the_position();
    std::string line = "note: the training data has " + std::to_string(train_size) + " samples, and " + path + "'s run had " +
                       std::to_string(progress.train_samples);
    if (progress.position > 0)
      line += ": the epoch order changes with the count, so the rest of epoch " + std::to_string(progress.epoch + 1) +
              " is not exactly the samples that run had left";
    if (total_steps != old_total)
      line += std::string(progress.position > 0 ? ";" : ":") + " the run ends at step " + std::to_string(total_steps) +
              ", the end of its epochs at " + std::to_string(steps_per_epoch) + " steps each";
    reporter.later(line + (progress.position == 0 && total_steps == old_total ? ": training goes on with the data as it is now" : ""));
  }
  // Rows of a database that changed under the run: the epochs ahead read other samples.
  const auto rows_now = data_rows_of(data.sources.provenance);
  if (!progress.data_rows.empty() && progress.data_rows != rows_now) {
    const auto what = "the rows of the database changed since " + path + " was written: its run read " + progress.data_rows +
                      ", and this one reads " + rows_now;
    if (config.data.require_same)
      throw UsageError(what + " (data.require_same: true)",
                       "restore the rows the run trained on, or set data.require_same: false to go on with the rows as they are now");
    reporter.later("note: " + what + "; training goes on with the rows as they are now (data.require_same: true stops instead)");
  }
  stamp_progress();
}

// The steps left, counted from where the checkpoint stands in its epoch: the rest of that epoch,
// then the epochs after it, at this run's steps per epoch. Counted as epochs x steps per epoch,
// a resumed run whose data gained or lost samples ended inside an extra epoch, or short of its last.
void Trainer::State::count_steps_from_the_position() {
  const auto done_in_epoch = (progress.position + effective_batch - 1) / effective_batch;
  std::int64_t left = std::max<std::int64_t>(0, steps_per_epoch - done_in_epoch);
  const auto later_epochs = std::max<std::int64_t>(0, config.train.epochs - progress.epoch - 1);
  if (progress.epoch >= config.train.epochs) left = 0;
  std::int64_t later_steps = 0, steps_left = 0;
  if (__builtin_mul_overflow(later_epochs, steps_per_epoch, &later_steps) || __builtin_add_overflow(left, later_steps, &steps_left) ||
      __builtin_add_overflow(progress.step, steps_left, &total_steps))
    total_steps = INT64_MAX;  // bounded by max_steps, as count_the_steps requires of such a run
  if (config.train.max_steps > 0) total_steps = std::min(total_steps, config.train.max_steps);
}

void Trainer::State::write_config_file() {
  if (ranks.writer()) core::write_file_atomically((fs::path(config.logging.dir) / "config.yaml").string(), config_yaml);
}

}  // namespace gputrain::train
