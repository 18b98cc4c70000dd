#pragma once
// model.init_weights: the weights a new run starts from instead of random ones, as fine-tuning
// does: a new classifier head when only the number of classes differs, and with
// model.init_strict: false whatever fits.

#include <cstdint>
#include <string>
#include <vector>

#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"

namespace gputrain::train {

/// Copies model.init_weights into `model` (on the CPU, before it moves to the device): a
/// .safetensors file (a finished run's model.safetensors, or one Python saved), a state_dict
/// Python's torch.save wrote (torchvision's .pth), or a gputrain checkpoint, whose weights alone
/// are taken. Names under a wrapper's prefix ("module.") are read without it. When only the
/// classifier head's rows differ (`outputs` classes here, another number in the file) the head
/// keeps its random start; with model.init_strict: false every tensor that fits is loaded and the
/// rest keep theirs. Anything else that does not fit, a missing file or a folder is a UsageError
/// naming model.init_weights. Returns the notes to show before training (what was not loaded).
std::vector<std::string> load_init_weights(Model& model, const Config& config, std::int64_t outputs);

}  // namespace gputrain::train
