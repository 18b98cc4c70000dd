#include "activation_checkpointing_setup.hpp"

#include <torch/nn/module.h>

#include <algorithm>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/activation_checkpoint.hpp"
#include "gputrain/train/model.hpp"

namespace gputrain::train {
namespace {

bool under(const std::string& name, const std::string& prefix) {
  return prefix == "*" || name == prefix || name.rfind(prefix + ".", 0) == 0;
}

// "layer1.0, layer1.1, ... layer4.1": the first and last few of many.
std::string listed(const std::vector<std::string>& names) {
  if (names.size() <= 6) return core::join(names);
  return core::join({names.begin(), names.begin() + 3}) + ", ... " + core::join({names.end() - 2, names.end()});
}

// The model's CheckpointableBlocks, with their names, in registration order.
std::vector<std::pair<std::string, CheckpointableBlock*>> checkpointable_blocks(torch::nn::Module& module) {
  std::vector<std::pair<std::string, CheckpointableBlock*>> blocks;
  for (const auto& item : module.named_modules("", /*include_self=*/false))
    if (auto* block = dynamic_cast<CheckpointableBlock*>(item.value().get())) blocks.emplace_back(item.key(), block);
  return blocks;
}

const char* kRemedy =
    "set train.activation_checkpointing: false; the built-in resnet18/34/50 and transformer have blocks that "
    "recompute (a C++ model of your own: make its blocks gputrain::train::CheckpointableBlock)";

}  // namespace

std::string recompute_blocks(Model& model, const std::vector<std::string>& names) {
  auto* module = model.module();
  if (!module)
    throw UsageError(
        "train.activation_checkpointing is on, but the model is a TorchScript module (model.torchscript), whose "
        "blocks gputrain cannot recompute",
        kRemedy);
  const auto blocks = checkpointable_blocks(*module);
  if (blocks.empty())
    throw UsageError("train.activation_checkpointing is on, but " + model.name() + " has no block that can recompute its forward", kRemedy);
  std::vector<std::string> all, chosen;
  for (const auto& [name, block] : blocks) {
    all.push_back(name);
    const bool on = std::any_of(names.begin(), names.end(), [&](const std::string& p) { return under(name, p); });
    block->recompute_in_backward(on);
    if (on) chosen.push_back(name);
  }
  for (const auto& prefix : names)
    if (std::none_of(all.begin(), all.end(), [&](const std::string& n) { return under(n, prefix); }))
      throw UsageError("train.activation_checkpointing names '" + prefix + "', which is no block of " + model.name(),
                       "name blocks (or the stages holding them) among: " + listed(all) + "; or set it to true for all");
  return "activation checkpointing on " + std::to_string(chosen.size()) + " of " +
         core::counted(static_cast<std::int64_t>(all.size()), "block") + " (" + listed(chosen) +
         "): each recomputes its forward in backward";
}

bool recomputation_draws_random_numbers(Model& model) {
  auto* module = model.module();
  if (!module) return false;
  const auto blocks = checkpointable_blocks(*module);
  return std::any_of(blocks.begin(), blocks.end(),
                     [](const auto& b) { return b.second->recomputes_in_backward() && b.second->draws_random_numbers(); });
}

}  // namespace gputrain::train
