#include "gputrain/train/optimizer.hpp"

#include "fused_optimizers.hpp"
#include "gputrain/core/error.hpp"

namespace gputrain::train {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& c, std::vector<at::Tensor> params) {
  if (c.name == "sgd") {
    if (c.nesterov && c.momentum <= 0)
      throw UsageError("optimizer.nesterov needs optimizer.momentum above 0 (it is 0)",
                       "set optimizer.momentum, e.g. 0.9, or optimizer.nesterov: false");
    return std::make_unique<FusedSGD>(
        std::move(params), torch::optim::SGDOptions(c.lr).momentum(c.momentum).nesterov(c.nesterov).weight_decay(c.weight_decay));
  }
  const auto betas = std::make_tuple(c.betas.at(0), c.betas.at(1));
  if (c.name == "adam")
    return std::make_unique<FusedAdam>(std::move(params),
                                       torch::optim::AdamOptions(c.lr).betas(betas).eps(c.eps).weight_decay(c.weight_decay));
  return std::make_unique<FusedAdamW>(std::move(params),
                                      torch::optim::AdamWOptions(c.lr).betas(betas).eps(c.eps).weight_decay(c.weight_decay));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace gputrain::train
