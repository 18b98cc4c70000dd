#pragma once
// Checkpoints: everything a run needs to continue exactly where it stopped (model, optimizer,
// loss scaler, RNG states, data position, step, epoch, the callbacks' states, resolved config), written
// atomically so a crash mid-write leaves the previous checkpoint intact.

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/train/callback.hpp"
#include "gputrain/train/model.hpp"

namespace torch::optim {
class Optimizer;
}

namespace gputrain::train {

class GradScaler;

/// A checkpoint whose bytes are not those written (a record fails its CRC-32, or the file was cut
/// short); thrown before anything is restored from it. Exit code 2, as for any input that
/// cannot be used: nothing was started.
class CheckpointDamaged : public Error {
 public:
  CheckpointDamaged(const std::string& message, std::string remedy) : Error(message, std::move(remedy), ExitCode::usage) {}
};

/// Where a run is: optimizer steps done, the epoch, samples of that epoch already consumed.
struct TrainingProgress {
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::int64_t position = 0;  ///< of this rank's share of the epoch
  /// The factor callbacks scale the schedule's learning rate by (scheduler: plateau's decays).
  double lr_scale = 1.0;
  /// Each callback's state_dict, by its name: early stopping's count, best.pt's best value, ...
  std::map<std::string, CallbackState> callbacks;
  /// The tensor_state of callbacks that keep tensors (the EMA's weights), by callback name.
  std::map<std::string, NamedTensors> callback_tensors;
  /// What a step and a position mean: samples per optimizer step over all ranks, the ranks, and
  /// the training samples the epoch orders permute (0 in checkpoints written before they were
  /// saved: unknown).
  std::int64_t global_batch = 0;
  std::int64_t world_size = 0;
  std::int64_t train_samples = 0;
  /// Wall time the run has trained for (steps, validation, checkpoints), summed over resumes:
  /// what train.max_time counts. 0 in checkpoints written before it was saved.
  double trained_seconds = 0;
  /// Which rows a database source read: "data.query: 800 rows, checksum 1f...; data.val_query: ..."
  /// (empty for files, and in checkpoints written before it was saved).
  std::string data_rows;
};

/// The live objects a checkpoint is taken from and restored into.
struct CheckpointParts {
  Model& model;
  torch::optim::Optimizer& optimizer;
  GradScaler& scaler;
  c10::Device device;  ///< whose RNG state is saved besides the CPU's
};

/// Writes one checkpoint file atomically (temporary file, fsync, rename).
void save_checkpoint(const std::string& path, const CheckpointParts& parts, const TrainingProgress& progress,
                     const std::string& config_yaml);

/// What a checkpoint was written with, shown to load_checkpoint's caller before anything is restored.
using CheckpointCheck = std::function<void(const std::string& config_yaml, const TrainingProgress& progress)>;

/// Restores model, optimizer, scaler and RNG states from `path` and returns the saved progress.
/// `check`, when given, sees the checkpoint's config and progress first (the file is read once)
/// and throws to refuse it, leaving the live objects untouched. Throws Error when the file is
/// unreadable or belongs to a different model, CheckpointDamaged when it is damaged.
TrainingProgress load_checkpoint(const std::string& path, const CheckpointParts& parts, const CheckpointCheck& check = {});

/// Loads only the model's weights from checkpoint `path` (best.pt, for a run that ends on its best
/// epoch's weights, or a checkpoint to evaluate) and returns where that run was; the optimizer and
/// RNG states stay as they are. `origin` names the file and the fix in load_named_state's errors.
TrainingProgress load_checkpoint_weights(const std::string& path, Model& model, c10::Device device, const StateOrigin& origin = {});

/// The model's tensors in checkpoint `path` by state_dict name, on the CPU, restoring nothing
/// (model.init_weights from a checkpoint, which may fit the model only in part).
NamedTensors checkpoint_weights(const std::string& path);

/// Whether `path` is a zip archive, as every checkpoint is (LibTorch writes them so); a safetensors
/// weights file is not.
bool is_zip_archive(const std::string& path);

/// Where the run a checkpoint holds was (step, epoch, the callbacks' states), restoring nothing.
TrainingProgress checkpoint_progress(const std::string& path);

/// The resolved config (YAML) stored in a checkpoint.
std::string checkpoint_config(const std::string& path);

/// A checkpoint folder: step-NNNNNNNN.pt files (the newest keep_last kept) and best.pt.
class CheckpointStore {
 public:
  CheckpointStore(std::string dir, std::int64_t keep_last);
  /// Saves step-<step>.pt and deletes periodic ones beyond keep_last; returns its path.
  std::string save(const CheckpointParts& parts, const TrainingProgress& progress, const std::string& config_yaml);
  /// Saves best.pt; returns its path.
  std::string save_best(const CheckpointParts& parts, const TrainingProgress& progress, const std::string& config_yaml);
  /// Where best.pt is (or would be).
  std::string best_path() const;
  /// The periodic checkpoint with the highest step, if any.
  std::optional<std::string> latest() const;
  /// Periodic checkpoints, oldest first.
  std::vector<std::string> periodic() const;
  /// Bytes of the periodic checkpoints and best.pt on disk now.
  std::uint64_t bytes_on_disk() const;
  /// Another run's checkpoints, moved out of a run's way (set_aside_after).
  struct SetAside {
    std::string folder;              ///< the sub-folder they went to
    std::vector<std::string> names;  ///< their file names, "step-00000024.pt", "best.pt"
    std::uint64_t bytes = 0;
    std::vector<std::string> dropped;  ///< earlier sets deleted: one is kept, as keep_last keeps checkpoints
  };
  /// Moves the periodic checkpoints past `step` (and best.pt when `with_best`) into a sub-folder,
  /// "earlier-YYYYmmdd-HHMMSS", where neither a resume nor keep_last sees them. A run that starts
  /// over (step 0) or goes on from an earlier checkpoint would otherwise leave them among its own,
  /// and the next resume would go on from the newest of either. Empty names: nothing was there.
  /// Only the newest such set is kept (a config with `never`, run again and again, would fill the disk).
  SetAside set_aside_after(std::int64_t step, bool with_best);
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::int64_t keep_last_;
};

}  // namespace gputrain::train
