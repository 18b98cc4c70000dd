#include "checkpoint_errors.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/checkpoint.hpp"

namespace gputrain::train {

namespace fs = std::filesystem;

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

// What `path` is, when it is not a checkpoint gputrain can open: the mistakes users make are a
// folder, a weights file and a file cut short by a full disk.
void throw_unreadable(const std::string& path, const std::string& reader_message) {
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
    throw UsageError(what + "it is not a checkpoint (gputrain's are zip archives, as torch.save writes them)",
                     "point checkpoint.resume at a run's step-*.pt or best.pt, or set it to auto or never; to start a new run "
                     "from weights, set model.init_weights: a .safetensors file, and checkpoint.resume: never");
  }
  const std::string reason = core::without_miniz_advice(reader_message);
  if (reason.find("constants.pkl") != std::string::npos || reason.find("data.pkl") != std::string::npos)
    throw UsageError(what + "it is a zip archive, but not a checkpoint (it has no data.pkl)",
                     "point checkpoint.resume at a run's step-*.pt or best.pt, or set it to auto or never");
  throw Error(what + reason,
              "if another LibTorch version wrote it, read it with that version; else delete it to resume from the checkpoint "
              "before it, or set checkpoint.resume: never");
}

namespace {

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

}  // namespace

// A checkpoint whose bytes changed after it was written (a disk or a copy error) or that was cut
// short: the damage, and the intact checkpoint to go on from instead.
void throw_damaged(const std::string& path, const ArchiveDamage& damage) {
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

}  // namespace gputrain::train
