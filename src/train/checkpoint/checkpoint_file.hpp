#pragma once
// One checkpoint file, read once whatever its format. Format 3 is a dict that Python's
// torch.load(path, weights_only=True) opens (pickled_checkpoint.cpp, docs/checkpoints.md);
// formats 1 and 2 were LibTorch's C++ archives (archive_checkpoint.cpp), still read to resume.

#include <cstdint>
#include <functional>
#include <string>

#include "gputrain/train/checkpoint.hpp"

namespace gputrain::train {

/// The format save_checkpoint writes.
inline constexpr std::int64_t kCheckpointFormat = 3;

/// What a checkpoint holds, its tensors on the CPU.
struct CheckpointContents {
  TrainingProgress progress;
  std::string config;
  NamedTensors model;
  NamedTensors scaler;  ///< by GradScaler::state()'s names
  NamedTensors rng;     ///< "cpu", and "cuda" when the run was on a GPU
  /// Restores the optimizer's state; throws UsageError when it does not fit the optimizer.
  std::function<void(torch::optim::Optimizer&)> restore_optimizer;
};

/// Writes a format-3 checkpoint atomically: a zip archive as torch.save writes one.
void write_pickled_checkpoint(const std::string& path, const CheckpointParts& parts, const TrainingProgress& progress,
                              const std::string& config_yaml, const NamedTensors& rng);

/// Whether torch.save archive `path` is a gputrain checkpoint (its data.pkl names the format), not
/// a Python model's state_dict: read from that small record alone, no tensor.
bool holds_gputrain_run(const std::string& path);

/// Reads a format-3 checkpoint, or throws UsageError when `path` is a torch.save file gputrain did not write.
CheckpointContents read_pickled_checkpoint(const std::string& path);

/// Reads a checkpoint of format 1 or 2 (LibTorch's archive), its optimizer state onto `device`.
CheckpointContents read_archive_checkpoint(const std::string& path, c10::Device device);

/// Throws UsageError when `version` is newer than this gputrain reads.
void refuse_newer_format(const std::string& path, std::int64_t version);

}  // namespace gputrain::train
