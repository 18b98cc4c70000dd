#pragma once
// Adapters from the two kinds of network to train::Model.

#include <memory>
#include <string>

#include <torch/nn/modules/container/any.h>

#include "gputrain/train/model.hpp"

namespace gputrain::train {

/// A C++ torch::nn module (from the registry).
std::unique_ptr<Model> wrap_module(torch::nn::AnyModule module, std::string name);

/// A module scripted in Python (torch.jit.script/trace, then .save()). Throws UsageError when the
/// file is missing or not TorchScript.
std::unique_ptr<Model> load_torchscript(const std::string& path);

}  // namespace gputrain::train
