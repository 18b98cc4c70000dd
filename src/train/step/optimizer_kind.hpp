#pragma once
// Which of LibTorch's optimizers an optimizer is (gputrain's fused ones derive from them): what the
// checkpoint layout and the sharded state read their per-parameter state as.

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace gputrain::train {

enum class OptimizerKind { sgd, adam, adamw, other };

inline OptimizerKind optimizer_kind(torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<torch::optim::SGD*>(&optimizer)) return OptimizerKind::sgd;
  if (dynamic_cast<torch::optim::Adam*>(&optimizer)) return OptimizerKind::adam;
  if (dynamic_cast<torch::optim::AdamW*>(&optimizer)) return OptimizerKind::adamw;
  return OptimizerKind::other;
}

}  // namespace gputrain::train
