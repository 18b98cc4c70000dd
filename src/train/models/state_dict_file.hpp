#pragma once
// Weights Python's torch.save wrote: a zip whose data.pkl is a pickled state_dict (torchvision's,
// timm's and Hugging Face's .pth/.bin files), or a training script's checkpoint dict holding one.
// LibTorch's unpickler reads them; no Python is needed.

#include <ATen/core/ivalue.h>

#include <string>

#include "gputrain/train/model.hpp"

namespace gputrain::train {

/// Whether `path` is a zip archive torch.save wrote (a data.pkl and no TorchScript code, which a
/// gputrain checkpoint has).
bool is_torch_save_archive(const std::string& path);

/// The object torch.save file `path` holds, unpickled by LibTorch with its tensors on the CPU and
/// its OrderedDicts read as dicts. Throws c10::Error when LibTorch cannot unpickle it.
c10::IValue unpickle_torch_save(const std::string& path);

/// The tensors of the state_dict in torch.save file `path`, in the file's order: the top-level
/// dict, or the dict under "state_dict", "model_state_dict", "model" or "module" when the top level
/// is a checkpoint (Lightning's, and most scripts'). Throws UsageError naming `key` and the file
/// when it cannot be unpickled (a pickled class LibTorch does not know) or holds no tensors.
NamedTensors read_torch_save_state(const std::string& path, const std::string& key);

}  // namespace gputrain::train
