#pragma once
// What the trainer and quick-train both do to a device: apply the backend switches of the `train`
// section.

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// TF32, cuDNN benchmark and deterministic algorithms, as `t` asks.
void apply_backend_settings(const TrainConfig& t);

}  // namespace gputrain::train
