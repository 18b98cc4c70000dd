#pragma once
// Optimizers from the `optimizer` section: LibTorch's SGD, Adam and AdamW, each stepping all its
// parameters in one fused kernel (src/train/fused_optimizers.hpp).

#include <torch/optim/optimizer.h>

#include <memory>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// The optimizer the config names, over `params`. Throws UsageError for inconsistent settings
/// (e.g. nesterov without momentum).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config, std::vector<at::Tensor> params);

/// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace gputrain::train
