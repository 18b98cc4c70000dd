#pragma once
// The tensors of any weights file gputrain reads by name, whatever wrote it: model.init_weights
// loads them, and --evaluate compares their head with the data before naming a mismatch.

#include <string>

#include "gputrain/train/model.hpp"

namespace gputrain::train {

/// The named tensors of `path`: a state_dict Python's torch.save wrote (torchvision's .pth), a
/// gputrain checkpoint's weights, or a safetensors file. A file named as an archive (.pt, .pth,
/// .ckpt, .bin) that is neither a zip nor safetensors is refused as damaged or saved by an old
/// torch.save. Errors name `key` (the setting or flag that gave the path).
NamedTensors read_named_weights(const std::string& path, const std::string& key);

/// The weights a folder given where a weights file goes holds, for the fix: a run folder's
/// model.safetensors, else its checkpoints' best.pt or newest step-*.pt; a checkpoint folder's
/// best.pt or newest step-*.pt. "" when it holds none of them.
std::string weights_in_folder(const std::string& folder);

}  // namespace gputrain::train
