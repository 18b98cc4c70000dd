#include "gputrain/train/optimizer.hpp"

#include "fused_optimizers.hpp"
#include "gputrain/core/error.hpp"
#include "param_groups.hpp"

namespace gputrain::train {
namespace {

void refuse_nesterov_without_momentum(const OptimizerConfig& c) {
  if (c.name == "sgd" && c.nesterov && c.momentum <= 0)
    throw UsageError("optimizer.nesterov needs optimizer.momentum above 0 (it is 0)",
                     "set optimizer.momentum, e.g. 0.9, or optimizer.nesterov: false");
}

// One LibTorch group per planned group: the optimizer's options with the group's rate and decay.
template <typename Options>
std::vector<torch::optim::OptimizerParamGroup> groups_of(const ParamGroupPlan& plan, const Options& defaults) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (std::size_t g = 0; g < plan.params.size(); ++g) {
    auto options = std::make_unique<Options>(defaults);
    options->lr(plan.lrs[g]).weight_decay(plan.weight_decays[g]);
    groups.emplace_back(plan.params[g], std::move(options));
  }
  return groups;
}

std::unique_ptr<torch::optim::Optimizer> make_grouped(const OptimizerConfig& c, const ParamGroupPlan& plan) {
  refuse_nesterov_without_momentum(c);
  if (c.name == "sgd") {
    const auto options = torch::optim::SGDOptions(c.lr).momentum(c.momentum).nesterov(c.nesterov).weight_decay(c.weight_decay);
    return std::make_unique<FusedSGD>(groups_of(plan, options), options);
  }
  const auto betas = std::make_tuple(c.betas.at(0), c.betas.at(1));
  if (c.name == "adam") {
    const auto options = torch::optim::AdamOptions(c.lr).betas(betas).eps(c.eps).weight_decay(c.weight_decay);
    return std::make_unique<FusedAdam>(groups_of(plan, options), options);
  }
  const auto options = torch::optim::AdamWOptions(c.lr).betas(betas).eps(c.eps).weight_decay(c.weight_decay);
  return std::make_unique<FusedAdamW>(groups_of(plan, options), options);
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& c, std::vector<at::Tensor> params) {
  ParamGroupPlan plan{{std::move(params)}, {c.lr}, {c.weight_decay}};
  return make_grouped(c, plan);
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& c, const NamedTensors& named,
                                                        std::vector<double>& base_lrs) {
  const auto plan = plan_param_groups(c, named);
  base_lrs = plan.lrs;
  return make_grouped(c, plan);
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

void set_learning_rates(torch::optim::Optimizer& optimizer, const std::vector<double>& base_lrs,
                        const std::function<double(double)>& rate_for) {
  auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size() && g < base_lrs.size(); ++g) groups[g].options().set_lr(rate_for(base_lrs[g]));
}

}  // namespace gputrain::train
