#pragma once
// model.init_weights: the weights a new run starts from instead of random ones.

#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"

namespace gputrain::train {

/// Copies model.init_weights into `model` (on the CPU, before it moves to the device): a
/// .safetensors file (a finished run's model.safetensors, or one Python saved) or a gputrain
/// checkpoint, whose weights alone are taken (fine-tuning from it). A missing file, a folder, or
/// weights of another shape are UsageErrors naming model.init_weights.
void load_init_weights(Model& model, const Config& config);

}  // namespace gputrain::train
