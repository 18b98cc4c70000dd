// Checkpoints of formats 1 and 2: LibTorch's C++ archives (torch::serialize::OutputArchive), which
// gputrain wrote before format 3. Read so that runs begun with an older gputrain resume.

#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>

#include "checkpoint_file.hpp"
#include "optimizer_state_dict.hpp"

namespace gputrain::train {
namespace {

NamedTensors read_named(torch::serialize::InputArchive& archive, const std::string& prefix) {
  torch::serialize::InputArchive sub;
  archive.read(prefix, sub);
  NamedTensors tensors;
  for (const auto& name : sub.keys()) {
    at::Tensor t;
    sub.read(name, t, /*is_buffer=*/true);
    tensors.emplace_back(name, t);
  }
  return tensors;
}

std::int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  archive.read(key, value);
  return value.toInt();
}

// Checkpoints of format 1 kept the state of early stopping, the plateau schedule and best.pt as
// progress fields; the callbacks that own it now read it under their names.
std::map<std::string, CallbackState> format1_callback_states(torch::serialize::InputArchive& archive) {
  std::map<std::string, CallbackState> states;
  c10::IValue value;
  const auto number = [&](const char* key) -> std::optional<double> {
    if (!archive.try_read(key, value)) return std::nullopt;
    return value.isInt() ? static_cast<double>(value.toInt()) : value.toDouble();  // counts were written as integers
  };
  const auto flag = [&](const char* key) { return archive.try_read(key, value) && value.toInt() != 0; };
  const auto put = [](CallbackState& state, const char* key, std::optional<double> v) {
    if (v) state[key] = *v;
  };
  auto& best = states["best_checkpoint"];
  if (flag("progress.has_best")) put(best, "best", number("progress.best"));
  put(best, "best_epoch", number("progress.best_epoch"));
  auto& early_stop = states["early_stop"];
  if (flag("progress.has_early_stop_reference")) put(early_stop, "reference", number("progress.early_stop_reference"));
  put(early_stop, "epochs_without_improvement", number("progress.epochs_without_improvement"));
  auto& plateau = states["plateau"];
  if (flag("progress.has_plateau_reference")) put(plateau, "reference", number("progress.plateau_reference"));
  put(plateau, "epochs_without_improvement", number("progress.plateau_epochs_without_improvement"));
  return states;
}

// Format 2 kept the callbacks' states as one JSON text: {"early_stop": {"reference": 0.41, ...}, ...}.
std::map<std::string, CallbackState> read_callback_states(const std::string& path, const std::string& text) {
  try {
    return nlohmann::json::parse(text).get<std::map<std::string, CallbackState>>();
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointDamaged("checkpoint '" + path + "' has an unreadable callbacks record: " + e.what(),
                            "resume from another checkpoint of the run (checkpoint.resume: PATH), or set checkpoint.resume: never");
  }
}

// The progress fields, those that earlier versions did not write left at their defaults.
TrainingProgress read_progress(torch::serialize::InputArchive& archive, const std::string& path) {
  TrainingProgress progress;
  c10::IValue value;
  refuse_newer_format(path, archive.try_read("format_version", value) ? value.toInt() : 1);
  progress.step = read_int(archive, "progress.step");
  progress.epoch = read_int(archive, "progress.epoch");
  progress.position = read_int(archive, "progress.position");
  if (archive.try_read("progress.global_batch", value)) progress.global_batch = value.toInt();
  if (archive.try_read("progress.world_size", value)) progress.world_size = value.toInt();
  if (archive.try_read("progress.train_samples", value)) progress.train_samples = value.toInt();
  if (archive.try_read("progress.lr_scale", value) || archive.try_read("progress.plateau_scale", value))
    progress.lr_scale = value.toDouble();
  if (archive.try_read("progress.trained_seconds", value)) progress.trained_seconds = value.toDouble();
  if (archive.try_read("progress.data_rows", value)) progress.data_rows = value.toStringRef();
  progress.callbacks =
      archive.try_read("callbacks", value) ? read_callback_states(path, value.toStringRef()) : format1_callback_states(archive);
  return progress;
}

}  // namespace

CheckpointContents read_archive_checkpoint(const std::string& path, c10::Device device) {
  auto archive = std::make_shared<torch::serialize::InputArchive>();
  archive->load_from(path, device);
  CheckpointContents contents;
  contents.progress = read_progress(*archive, path);
  c10::IValue config;
  archive->read("config", config);
  contents.config = config.toStringRef();
  contents.model = read_named(*archive, "model");
  contents.scaler = read_named(*archive, "scaler");
  contents.rng = read_named(*archive, "rng");
  contents.restore_optimizer = [archive, path](torch::optim::Optimizer& optimizer) {
    torch::serialize::InputArchive saved;
    archive->read("optimizer", saved);
    try {
      optimizer.load(saved);
    } catch (const c10::Error& e) {
      refuse_optimizer_state(path, "", e.what_without_backtrace());
    }
  };
  return contents;
}

}  // namespace gputrain::train
