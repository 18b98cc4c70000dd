#pragma once
// Before the first step: will the checkpoint folder's disk hold what the config keeps? A run that
// finds out at its first save has trained for nothing (the save fails, no checkpoint exists).

#include <cstdint>
#include <string>

#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"

namespace gputrain::train {

/// Bytes of the model's parameters: its final weights file, and one optimizer slot.
std::uint64_t parameter_bytes(Model& model);

/// Bytes one checkpoint of this model takes: its state (parameters and buffers), the optimizer's
/// per-parameter state (SGD momentum: 1 copy of the parameters, Adam/AdamW: 2), and a margin for
/// the archive's own records (RNG states, config, scaler).
std::uint64_t estimate_checkpoint_bytes(Model& model, const OptimizerConfig& optimizer);

/// What the folder holds at its fullest: keep_last periodic checkpoints, the next one being
/// written before the oldest is deleted, best.pt, and (in the run directory) the final weights.
struct CheckpointSpace {
  std::uint64_t checkpoint_bytes = 0;  ///< one checkpoint (estimate_checkpoint_bytes)
  std::int64_t keep_last = 1;
  bool keeps_best = false;
  std::uint64_t weights_bytes = 0;  ///< model.safetensors at the end
  std::uint64_t already_there = 0;  ///< this run's checkpoints already on that disk (a resume)
  std::uint64_t needed() const;     ///< more free bytes the run needs at its fullest
};

/// Throws UsageError naming the figures and the three fixes when `available` bytes are fewer
/// than the run needs in `dir`.
void check_checkpoint_space(const CheckpointSpace& space, std::uint64_t available, const std::string& dir);

}  // namespace gputrain::train
