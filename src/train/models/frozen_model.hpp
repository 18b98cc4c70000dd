#pragma once
// train.freeze: parts of a model that do not train, as in fine-tuning a pretrained backbone.

#include <memory>
#include <string>
#include <vector>

#include "gputrain/train/model.hpp"

namespace gputrain::train {

/// `model` with the parameters under `prefixes` frozen. A prefix is a whole name component:
/// "layer1" freezes layer1.0.conv1.weight, not layer10's. Frozen parameters get requires_grad off
/// and are left out of parameters() (the optimizer's list: no gradients, no optimizer state);
/// batch norm under a prefix stays in eval mode while the rest trains, so it normalises with the
/// pretrained statistics and does not update them (built-in models; a TorchScript module's batch
/// norm follows the run's mode). A prefix that names no parameter, or prefixes that leave nothing
/// to train, are UsageErrors naming train.freeze. `note` receives what was frozen.
std::unique_ptr<Model> freeze_parameters(std::unique_ptr<Model> model, const std::vector<std::string>& prefixes, std::string& note);

}  // namespace gputrain::train
