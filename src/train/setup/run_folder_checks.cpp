#include "run_folder_checks.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>
#include <vector>

#include "gputrain/core/directory_lock.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/checkpoint.hpp"

namespace gputrain::train {

namespace fs = std::filesystem;

namespace {

// Whether `inner` is `outer` or lies under it, once both are absolute, `..` and links resolved.
bool lies_inside(const std::string& inner, const std::string& outer) {
  std::error_code ec;
  const auto in = fs::weakly_canonical(fs::absolute(inner, ec), ec), out = fs::weakly_canonical(fs::absolute(outer, ec), ec);
  if (ec) return false;
  auto mismatch = std::mismatch(out.begin(), out.end(), in.begin(), in.end());
  return mismatch.first == out.end() || (std::next(mismatch.first) == out.end() && mismatch.first->empty());  // "imgs/"
}

// A run's folder: its lock file, or, from a version before the lock or copied without its
// dot-files, checkpoints in its checkpoints/ sub-folder.
bool a_runs_folder(const std::string& folder) {
  if (core::DirectoryLock::used_by_a_run(folder)) return true;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(folder) / "checkpoints", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".pt") return true;
  return false;
}

// The folder a run at `run` (absolute) was started from when its logging.dir was `dir`: `run` less
// dir's components at its end; "" when `dir` is absolute or `run` does not end with it.
fs::path folder_run_from(fs::path run, const fs::path& dir) {
  if (dir.is_absolute()) return {};
  std::vector<fs::path> parts;
  for (const auto& part : dir.lexically_normal())
    if (!part.empty() && part != ".") parts.push_back(part);
  for (auto part = parts.rbegin(); part != parts.rend(); ++part) {
    if (run.filename() != *part) return {};
    run = run.parent_path();
  }
  return parts.empty() ? fs::path() : run;
}

// " --set checkpoint.dir=..." that moves a checkpoint.dir set inside logging.dir `from` along to `to`.
std::string checkpoints_along(const Config& config, const std::string& from, const fs::path& to) {
  if (config.checkpoint.dir.empty() || !lies_inside(config.checkpoint.dir, from)) return "";
  std::error_code ec;
  const auto inner = fs::weakly_canonical(fs::absolute(config.checkpoint.dir, ec), ec)
                         .lexically_relative(fs::weakly_canonical(fs::absolute(from, ec), ec));
  return " --set checkpoint.dir=" + (to / inner).lexically_normal().string();
}

// Whether `file`, a config.yaml in `folder`, is the one a run saved there: the folder is a run's
// (its lock), or holds checkpoints and the file sets nearly every key, as a run's saved config
// does, where a project's own config.yaml beside another tool's checkpoints/ sets a few.
bool saved_by_a_run(const Config& config, const std::string& file, const std::string& folder) {
  if (core::DirectoryLock::used_by_a_run(folder)) return true;
  if (!a_runs_folder(folder)) return false;
  const auto from_file =
      std::count_if(config.origins.begin(), config.origins.end(), [&](const auto& key) { return key.second.file == file; });
  return static_cast<std::size_t>(from_file) * 4 >= config_keys().size() * 3;  // 3/4: a run of an older version saved fewer keys
}

}  // namespace

void refuse_run_config_from_elsewhere(const Config& config) {
  const auto origin = config.origins.find("logging.dir");
  if (origin == config.origins.end()) return;
  const fs::path file(origin->second.file);
  if (file.filename() != "config.yaml") return;  // set by --set, a flag or a config of the user's own
  const std::string saved_in = file.has_parent_path() ? file.parent_path().string() : ".";
  const auto& dir = config.logging.dir;
  std::error_code ec;
  if (!saved_by_a_run(config, origin->second.file, saved_in) || fs::equivalent(saved_in, dir, ec)) return;
  const auto run = fs::weakly_canonical(fs::absolute(saved_in, ec), ec);
  const auto started_from = folder_run_from(run, dir);
  const std::string how = started_from.empty() ? "the folder was moved or copied since"
                                               : "gputrain runs from another folder than the run did, " + started_from.string();
  const std::string then = a_runs_folder(dir) ? "go on with the run in '" + dir + "' instead of this one"
                                              : "start a new run in '" + dir + "', away from this run's checkpoints";
  const std::string go_on =
      started_from.empty() ? "to go on with this run where it is: --set logging.dir=" + saved_in + checkpoints_along(config, dir, saved_in)
                           : "run gputrain from " + started_from.string() +
                                 ", where the run started (paths in a config are taken from the folder gputrain runs in)";
  const std::string saved_here = saved_in == "." ? "the current folder, " + run.string() : "'" + saved_in + "'";
  throw UsageError(origin->second.where + ": logging.dir '" + dir + "' is not the run folder this config.yaml was saved in, " + saved_here +
                       " (" + how + "): training would " + then,
                   go_on + "; to start a new run from its settings: --set logging.dir=runs/NAME");
}

void refuse_foreign_run_files(const Config& config) {
  const auto& folder = config.logging.dir;
  std::error_code ec;
  if (!a_runs_folder(folder)) {
    std::vector<std::string> found;
    for (const char* name : {"config.yaml", "model.safetensors", "metrics.jsonl", "report.json", "training.log"})
      if (fs::exists(fs::path(folder) / name, ec)) found.emplace_back(name);
    const bool one = found.size() == 1;
    if (!found.empty())
      throw UsageError("logging.dir '" + folder + "' holds " + core::join(found) + ", which no gputrain run wrote there (the folder " +
                           "has no .gputrain.lock, nor checkpoints): the run would write its own " +
                           (one ? "file over it" : "files over them"),
                       std::string("give the run a folder of its own (logging.dir: runs/NAME, or --set logging.dir=runs/NAME), or move ") +
                           (one ? "that file" : "those files") + " out of '" + folder + "'");
  }
  // A checkpoint.dir of its own (a models folder) holding another's best.pt, which save_best would replace.
  const auto checkpoints = config.checkpoint_dir();
  if (config.checkpoint.dir.empty() || fs::equivalent(checkpoints, folder, ec) || core::DirectoryLock::used_by_a_run(checkpoints)) return;
  if (CheckpointStore(checkpoints, 0).periodic().empty() && fs::exists(fs::path(checkpoints) / "best.pt", ec))
    throw UsageError("checkpoint.dir '" + checkpoints + "' holds best.pt, which no gputrain run wrote there (the folder has no " +
                         ".gputrain.lock, nor step-*.pt checkpoints): the run's best checkpoint would be written over it",
                     "give the run's checkpoints a folder of their own (checkpoint.dir: runs/NAME/checkpoints), or move best.pt out of '" +
                         checkpoints + "'");
}

void refuse_run_folder_among_classes(const Config& config) {
  if (config.data.source != "image_folder") return;
  const std::array<std::pair<const char*, std::string>, 2> data{{{"data.path", config.data.path}, {"data.val_path", config.data.val_path}}};
  const std::array<std::pair<const char*, std::string>, 2> runs{
      {{"logging.dir", config.logging.dir}, {"checkpoint.dir", config.checkpoint_dir()}}};
  for (const auto& [data_key, images] : data)
    for (const auto& [run_key, folder] : runs)
      if (!images.empty() && lies_inside(folder, images))
        throw UsageError(std::string(run_key) + " '" + folder + "' is inside " + data_key + " '" + images +
                             "', an image folder whose sub-folders are its classes: the next run would read the run's folder as a class",
                         "put the run outside the images: --set " + std::string(run_key) + "=runs/NAME");
}

}  // namespace gputrain::train
