#include "gputrain/train/checkpoint.hpp"

#include <ATen/Context.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "checkpoint_integrity.hpp"
#include "core/json_text.hpp"
#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/log.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/model.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;
// 2: the callbacks' states in one JSON record (1 kept early stopping's, plateau's and best.pt's as progress fields).
constexpr std::int64_t kFormatVersion = 2;

at::Generator default_generator(c10::Device device) {
  return device.is_cuda() ? at::globalContext().defaultGenerator(device) : at::globalContext().defaultGenerator(at::kCPU);
}

at::Tensor rng_state(c10::Device device) {
  auto gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_rng_state(c10::Device device, const at::Tensor& state) {
  auto gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

void write_named(torch::serialize::OutputArchive& archive, const std::string& prefix, const NamedTensors& tensors) {
  torch::serialize::OutputArchive sub;
  for (const auto& [name, t] : tensors) sub.write(name, t.detach(), /*is_buffer=*/true);
  archive.write(prefix, sub);
}

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

// The checkpoints beside a missing one, newest last, so that a mistyped name shows the right one.
std::string checkpoints_beside(const std::string& path) {
  const auto folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.is_regular_file(ec) && entry.path().extension() == ".pt") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names.empty() ? "" : "; " + folder.string() + " has " + core::join(names);
}

// What `path` is, when it is not a checkpoint LibTorch can open: the mistakes users make are a
// weights file, a Python torch.save pickle and a file cut short by a full disk.
[[noreturn]] void throw_unreadable(const std::string& path, const std::string& libtorch_message) {
  const std::string what = "checkpoint '" + path + "' cannot be read: ";
  std::error_code ec;
  if (fs::is_directory(path, ec)) {  // a run's folder, or its checkpoints folder
    auto newest = CheckpointStore((fs::path(path) / "checkpoints").string(), 0).latest();
    if (!newest) newest = CheckpointStore(path, 0).latest();
    throw UsageError(what + "it is a folder; checkpoint.resume names a checkpoint file",
                     !newest ? "point checkpoint.resume at a run's step-*.pt or best.pt (the folder holds none)"
                             : "set checkpoint.resume: " + *newest +
                                   ", the newest checkpoint there (or auto, with logging.dir: that "
                                   "run's folder, to go on from its newest)");
  }
  if (!is_zip_archive(path)) {
    if (fs::path(path).extension() == ".safetensors")
      throw UsageError(what + "it is a safetensors weights file, which holds no optimizer state or step to resume from",
                       "to start a new run from these weights, set model.init_weights: " + path + " and checkpoint.resume: never");
    throw UsageError(what + "it is not a checkpoint (gputrain's are zip archives, as LibTorch writes them)",
                     "point checkpoint.resume at a run's step-*.pt or best.pt, or set it to auto or never; to start a new run "
                     "from weights, set model.init_weights: a .safetensors file, and checkpoint.resume: never");
  }
  // LibTorch's reader appends a paragraph about miniz to every failure; its first sentence says it.
  const std::string reason = libtorch_message.substr(0, libtorch_message.find(". This is an internal miniz error"));
  if (reason.find("constants.pkl") != std::string::npos || reason.find("data.pkl") != std::string::npos)
    throw UsageError(what +
                         "it is a zip archive, but not one LibTorch's C++ serializer wrote (Python's torch.save writes a pickle, "
                         "which holds no gputrain run to resume)",
                     "resume from a checkpoint gputrain wrote; to start from a Python model's weights (a state_dict torch.save "
                     "wrote), set model.init_weights: " +
                         path + " and checkpoint.resume: never");
  throw Error(what + reason,
              "if another LibTorch version wrote it, read it with that version; else delete it to resume from the checkpoint "
              "before it, or set checkpoint.resume: never");
}

// The newest periodic checkpoint beside `path` whose records are all intact, if any.
std::optional<std::string> newest_intact_beside(const std::string& path) {
  const auto folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  static const std::regex periodic("step-[0-9]+\\.pt");
  std::vector<fs::path> candidates;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (std::regex_match(entry.path().filename().string(), periodic) && !fs::equivalent(entry.path(), path, ec))
      candidates.push_back(entry.path());
  std::sort(candidates.rbegin(), candidates.rend());  // zero-padded steps: the newest first
  for (const auto& candidate : candidates)
    if (!archive_damage(candidate.string())) return candidate.string();
  return std::nullopt;
}

// A checkpoint whose bytes changed after it was written (a disk or a copy error) or that was cut
// short: the damage, and the intact checkpoint to go on from instead.
[[noreturn]] void throw_damaged(const std::string& path, const ArchiveDamage& damage) {
  const std::string what = damage.record.empty()
                               ? "checkpoint '" + path + "' is damaged: its zip directory cannot be read (" + damage.why +
                                     "): the file was cut short (a full disk, a copy interrupted) or changed after it was written"
                               : "checkpoint '" + path + "' is damaged: its record '" + damage.record + "' is not what was written (" +
                                     damage.why + "): a disk or a copy changed the file after it was written";
  const auto intact = newest_intact_beside(path);
  throw CheckpointDamaged(what, intact ? "delete it, and checkpoint.resume: auto resumes from " + *intact +
                                             ", the newest intact checkpoint beside it; or point checkpoint.resume (or --evaluate) at "
                                             "another checkpoint"
                                       : "no intact checkpoint is beside it: restore it from a copy, or set checkpoint.resume: never to "
                                         "start over");
}

torch::serialize::InputArchive open(const std::string& path, c10::Device device) {
  if (!fs::exists(path))
    throw UsageError("checkpoint '" + path + "' does not exist" + checkpoints_beside(path),
                     "set checkpoint.resume to auto, never, or an existing file");
  // LibTorch's reader never checks the records' CRC-32s, so a changed byte would load as a wrong
  // weight. (Checking on a thread of its own while LibTorch reads was no faster on 2 cores.)
  const auto started = std::chrono::steady_clock::now();
  if (is_zip_archive(path))
    if (const auto damage = archive_damage(path)) throw_damaged(path, *damage);
  const auto checked = std::chrono::steady_clock::now();
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device);
  } catch (const c10::Error& e) {
    throw_unreadable(path, e.what_without_backtrace());
  } catch (const std::exception& e) {  // TorchScript's parser of the archive's code
    throw_unreadable(path, e.what());
  }
  const auto seconds = [](auto from, auto to) { return core::format_fixed(std::chrono::duration<double>(to - from).count(), 3); };
  core::log_debug("checkpoint " + path + " (" + core::format_bytes(fs::file_size(path)) + "): records checked against their CRC-32s in " +
                  seconds(started, checked) + " s, then read by LibTorch in " + seconds(checked, std::chrono::steady_clock::now()) + " s");
  return archive;
}

std::string read_config(torch::serialize::InputArchive& archive) {
  c10::IValue config;
  archive.read("config", config);
  return config.toStringRef();
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

// {"early_stop": {"reference": 0.41, ...}, ...}: the callbacks' states as one JSON text.
std::string callback_states_text(const std::map<std::string, CallbackState>& states) {
  nlohmann::json all = nlohmann::json::object();
  for (const auto& [name, state] : states) all[name] = state;
  return core::json_text(all);
}

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
  const std::int64_t version = archive.try_read("format_version", value) ? value.toInt() : 1;
  if (version > kFormatVersion)
    throw UsageError("checkpoint '" + path + "' is of format " + std::to_string(version) +
                         ", written by a newer gputrain (this one reads up to " + std::to_string(kFormatVersion) + ")",
                     "resume with the gputrain version that wrote it, or set checkpoint.resume: never");
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

void save_checkpoint(const std::string& path, const CheckpointParts& parts, const TrainingProgress& progress,
                     const std::string& config_yaml) {
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(kFormatVersion));
  write_named(archive, "model", parts.model.named_state());
  torch::serialize::OutputArchive optimizer;
  parts.optimizer.save(optimizer);
  archive.write("optimizer", optimizer);
  write_named(archive, "scaler", parts.scaler.state());
  NamedTensors rng{{"cpu", rng_state(c10::Device(at::kCPU))}};
  if (parts.device.is_cuda()) rng.emplace_back("cuda", rng_state(parts.device));
  write_named(archive, "rng", rng);
  archive.write("progress.step", c10::IValue(progress.step));
  archive.write("progress.epoch", c10::IValue(progress.epoch));
  archive.write("progress.position", c10::IValue(progress.position));
  archive.write("progress.lr_scale", c10::IValue(progress.lr_scale));
  archive.write("callbacks", c10::IValue(callback_states_text(progress.callbacks)));
  archive.write("progress.global_batch", c10::IValue(progress.global_batch));
  archive.write("progress.world_size", c10::IValue(progress.world_size));
  archive.write("progress.data_rows", c10::IValue(progress.data_rows));
  archive.write("progress.train_samples", c10::IValue(progress.train_samples));
  archive.write("progress.trained_seconds", c10::IValue(progress.trained_seconds));
  archive.write("config", c10::IValue(config_yaml));
  std::ostringstream bytes;
  archive.save_to(bytes);
  core::write_file_atomically(path, bytes.str());
}

bool is_zip_archive(const std::string& path) {
  char head[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return in.gcount() == sizeof head && std::string(head, sizeof head) == std::string("PK\x03\x04", 4);  // every zip archive starts so
}

TrainingProgress load_checkpoint(const std::string& path, const CheckpointParts& parts, const CheckpointCheck& check) {
  auto archive = open(path, parts.device);
  auto progress = read_progress(archive, path);  // not const: returned by move
  if (check) check(read_config(archive), progress);

  load_named_state(parts.model, read_named(archive, "model"));
  torch::serialize::InputArchive optimizer;
  archive.read("optimizer", optimizer);
  try {
    parts.optimizer.load(optimizer);
  } catch (const c10::Error& e) {
    throw UsageError("the optimizer state in checkpoint '" + path + "' does not fit this run's optimizer: " + e.what_without_backtrace(),
                     "resume with the optimizer settings the checkpoint was written with (its config.yaml), or set "
                     "checkpoint.resume: never");
  }
  parts.scaler.load_state(read_named(archive, "scaler"));
  for (const auto& [name, state] : read_named(archive, "rng")) {
    // RNG states are CPU byte tensors whatever device they describe.
    if (name == "cpu") set_rng_state(c10::Device(at::kCPU), state.to(at::kCPU));
    if (name == "cuda" && parts.device.is_cuda()) set_rng_state(parts.device, state.to(at::kCPU));
  }
  return progress;
}

TrainingProgress load_checkpoint_weights(const std::string& path, Model& model, c10::Device device, const StateOrigin& origin) {
  auto archive = open(path, device);
  load_named_state(model, read_named(archive, "model"), origin);
  return read_progress(archive, path);
}

NamedTensors checkpoint_weights(const std::string& path) {
  auto archive = open(path, c10::Device(at::kCPU));
  return read_named(archive, "model");
}

TrainingProgress checkpoint_progress(const std::string& path) {
  auto archive = open(path, c10::Device(at::kCPU));
  return read_progress(archive, path);
}

std::string checkpoint_config(const std::string& path) {
  auto archive = open(path, c10::Device(at::kCPU));
  return read_config(archive);
}

CheckpointStore::CheckpointStore(std::string dir, std::int64_t keep_last) : dir_(std::move(dir)), keep_last_(keep_last) {}

std::vector<std::string> CheckpointStore::periodic() const {
  static const std::regex pattern("step-([0-9]+)\\.pt");
  std::vector<std::pair<long long, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, match, pattern)) found.emplace_back(std::stoll(match[1]), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

std::uint64_t CheckpointStore::bytes_on_disk() const {
  auto files = periodic();
  files.push_back(best_path());
  std::uint64_t bytes = 0;
  for (const auto& file : files) {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (!ec) bytes += size;
  }
  return bytes;
}

std::optional<std::string> CheckpointStore::latest() const {
  auto all = periodic();
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::string CheckpointStore::save(const CheckpointParts& parts, const TrainingProgress& progress, const std::string& config_yaml) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld.pt", static_cast<long long>(progress.step));
  std::string path = (fs::path(dir_) / name).string();
  save_checkpoint(path, parts, progress, config_yaml);
  auto all = periodic();
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_last_) < all.size(); ++i) fs::remove(all[i]);
  return path;
}

std::string CheckpointStore::best_path() const { return (fs::path(dir_) / "best.pt").string(); }

std::string CheckpointStore::save_best(const CheckpointParts& parts, const TrainingProgress& progress, const std::string& config_yaml) {
  std::string path = best_path();
  save_checkpoint(path, parts, progress, config_yaml);
  return path;
}

}  // namespace gputrain::train
