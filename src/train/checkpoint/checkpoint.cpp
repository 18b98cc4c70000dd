#include "gputrain/train/checkpoint.hpp"

#include <ATen/Context.h>
#include <ATen/record_function.h>
#include <torch/optim/optimizer.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>

#include "checkpoint_errors.hpp"
#include "checkpoint_file.hpp"
#include "checkpoint_integrity.hpp"
#include "data/stand_in_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/log.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/model.hpp"
#include "rng_state.hpp"
#include "train/models/state_dict_file.hpp"

namespace gputrain::train {
namespace {

at::Generator default_generator(c10::Device device) {
  return device.is_cuda() ? at::globalContext().defaultGenerator(device) : at::globalContext().defaultGenerator(at::kCPU);
}

}  // namespace

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

namespace {

namespace fs = std::filesystem;

// Reads `path` whole (its records checked against their CRC-32s first), or says why it cannot.
CheckpointContents read_contents(const std::string& path, c10::Device device) {
  if (!fs::exists(path))
    throw UsageError("checkpoint '" + path + "' does not exist" + checkpoints_beside(path),
                     "set checkpoint.resume to auto, never, or an existing file");
  data::refuse_stand_in_file(path);
  if (!is_zip_archive(path)) throw_unreadable(path, "");
  // LibTorch's reader never checks the records' CRC-32s, so a changed byte would load as a wrong
  // weight. (Checking on a thread of its own while LibTorch reads was no faster on 2 cores.)
  const auto started = std::chrono::steady_clock::now();
  if (const auto damage = archive_damage(path)) throw_damaged(path, *damage);
  const auto checked = std::chrono::steady_clock::now();
  CheckpointContents contents;
  try {
    contents = is_torch_save_archive(path) ? read_pickled_checkpoint(path) : read_archive_checkpoint(path, device);
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw_unreadable(path, e.what_without_backtrace());
  } catch (const std::exception& e) {  // TorchScript's parser of a format-2 archive's code
    throw_unreadable(path, e.what());
  }
  const auto seconds = [](auto from, auto to) { return core::format_fixed(std::chrono::duration<double>(to - from).count(), 3); };
  core::log_debug("checkpoint " + path + " (" + core::format_bytes(fs::file_size(path)) + "): records checked against their CRC-32s in " +
                  seconds(started, checked) + " s, then read in " + seconds(checked, std::chrono::steady_clock::now()) + " s");
  return contents;
}

}  // namespace

void save_checkpoint(const std::string& path, const CheckpointParts& parts, const TrainingProgress& progress,
                     const std::string& config_yaml) {
  RECORD_USER_SCOPE("gputrain::checkpoint");
  NamedTensors rng{{"cpu", rng_state(c10::Device(at::kCPU))}};
  if (parts.device.is_cuda()) rng.emplace_back("cuda", rng_state(parts.device));
  write_pickled_checkpoint(path, parts, progress, config_yaml, rng);
}

void refuse_newer_format(const std::string& path, std::int64_t version) {
  if (version > kCheckpointFormat)
    throw UsageError("checkpoint '" + path + "' is of format " + std::to_string(version) +
                         ", written by a newer gputrain (this one reads up to " + std::to_string(kCheckpointFormat) + ")",
                     "resume with the gputrain version that wrote it, or set checkpoint.resume: never");
}

bool is_zip_archive(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;  // a named pipe would block the open below
  char head[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return in.gcount() == sizeof head && std::string(head, sizeof head) == std::string("PK\x03\x04", 4);  // every zip archive starts so
}

TrainingProgress load_checkpoint(const std::string& path, const CheckpointParts& parts, const CheckpointCheck& check) {
  auto contents = read_contents(path, parts.device);
  if (check) check(contents.config, contents.progress);
  load_named_state(parts.model, contents.model);
  contents.restore_optimizer(parts.optimizer);
  parts.scaler.load_state(contents.scaler);
  for (const auto& [name, state] : contents.rng) {
    // RNG states are CPU byte tensors whatever device they describe.
    if (name == "cpu") set_rng_state(c10::Device(at::kCPU), state.to(at::kCPU));
    if (name == "cuda" && parts.device.is_cuda()) set_rng_state(parts.device, state.to(at::kCPU));
  }
  return std::move(contents.progress);
}

TrainingProgress load_checkpoint_weights(const std::string& path, Model& model, c10::Device device, const StateOrigin& origin) {
  auto contents = read_contents(path, device);
  load_named_state(model, contents.model, origin);
  return std::move(contents.progress);
}

NamedTensors checkpoint_weights(const std::string& path) { return read_contents(path, c10::Device(at::kCPU)).model; }

TrainingProgress checkpoint_progress(const std::string& path) { return read_contents(path, c10::Device(at::kCPU)).progress; }

std::string checkpoint_config(const std::string& path) { return read_contents(path, c10::Device(at::kCPU)).config; }

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

CheckpointStore::SetAside CheckpointStore::set_aside_after(std::int64_t step, bool with_best) {
  std::vector<std::string> files;
  for (const auto& path : periodic())
    if (std::stoll(fs::path(path).filename().string().substr(5)) > step) files.push_back(path);  // "step-" then digits
  std::error_code ec;
  if (with_best && fs::exists(best_path(), ec)) files.push_back(best_path());
  SetAside aside;
  if (files.empty()) return aside;
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "earlier-%Y%m%d-%H%M%S", std::localtime(&now));
  aside.folder = (fs::path(dir_) / stamp).string();
  for (int n = 2; fs::exists(aside.folder, ec); ++n) aside.folder = (fs::path(dir_) / stamp).string() + "-" + std::to_string(n);
  fs::create_directories(aside.folder, ec);
  for (const auto& file : files) {
    const auto name = fs::path(file).filename();
    if (const auto size = fs::file_size(file, ec); !ec) aside.bytes += size;
    fs::rename(file, fs::path(aside.folder) / name, ec);
    if (ec)
      throw Error("cannot move '" + file + "' into '" + aside.folder + "': " + ec.message(),
                  "move the checkpoints of the earlier run out of '" + dir_ + "' by hand, or give this run its own folder");
    aside.names.push_back(name.string());
  }
  std::vector<fs::path> earlier;  // listed first: removed while listing, a folder may be listed or not
  for (const auto& entry : fs::directory_iterator(dir_, ec))
    if (entry.is_directory(ec) && entry.path().filename().string().rfind("earlier-", 0) == 0 && entry.path() != fs::path(aside.folder))
      earlier.push_back(entry.path());
  for (const auto& folder : earlier)
    if (fs::remove_all(folder, ec); !ec) aside.dropped.push_back(folder.filename().string());
  return aside;
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
