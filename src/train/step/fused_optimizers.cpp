#include "fused_optimizers.hpp"

#include <ATen/ATen.h>

#include <map>
#include <vector>

namespace gputrain::train {
namespace {

// Whether the fused kernels can update this group: they walk parameter, gradient and state
// buffers as flat arrays of one dtype on one device.
bool fusable(const torch::optim::OptimizerParamGroup& group) {
  const at::Tensor* first = nullptr;
  for (const auto& p : group.params()) {
    const auto& grad = p.grad();
    if (!grad.defined()) continue;
    if (!at::isFloatingType(p.scalar_type()) || p.is_sparse() || grad.is_sparse()) return false;
    if (!p.is_non_overlapping_and_dense() || grad.strides() != p.strides() || grad.scalar_type() != p.scalar_type()) return false;
    if (first == nullptr) first = &p;
    if (p.device() != first->device() || p.scalar_type() != first->scalar_type()) return false;
  }
  return true;
}

// The kernels walk a state tensor in its parameter's memory order: one restored from a checkpoint
// in another layout is re-laid out once (values kept).
at::Tensor& in_layout_of(at::Tensor& state, const at::Tensor& param) {
  if (state.strides() != param.strides()) state = at::empty_like(param, at::MemoryFormat::Preserve).copy_(state);
  return state;
}

bool all_fusable(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  for (const auto& group : groups)
    if (!fusable(group)) return false;
  return true;
}

// One Adam or AdamW step over every group, if the kernel can take it (false: the caller steps
// with LibTorch's own); `fused` is at::_fused_adam_ or at::_fused_adamw_.
template <typename Options, typename State, typename Fused>
bool fused_adam_step(std::vector<torch::optim::OptimizerParamGroup>& groups,
                     ska::flat_hash_map<void*, std::unique_ptr<torch::optim::OptimizerParamState>>& states,
                     const torch::optim::Optimizer::LossClosure& closure, Fused fused) {
  if (closure || !all_fusable(groups)) return false;
  for (const auto& group : groups)
    if (static_cast<const Options&>(group.options()).amsgrad()) return false;
  at::NoGradGuard no_grad;
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    std::vector<at::Tensor> params, grads, averages, squares, steps;
    std::map<std::int64_t, at::Tensor> step_tensors;  // by count: every parameter normally shares one
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = states[p.unsafeGetTensorImpl()];
      if (!slot) {
        auto fresh = std::make_unique<State>();
        fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<State&>(*slot);
      state.step(state.step() + 1);
      auto& count = step_tensors[state.step()];
      if (!count.defined())
        count = at::full({}, static_cast<double>(state.step()), at::TensorOptions().dtype(at::kFloat).device(p.device()));
      steps.push_back(count);
      params.push_back(p);
      grads.push_back(p.grad());
      averages.push_back(in_layout_of(state.exp_avg(), p));
      squares.push_back(in_layout_of(state.exp_avg_sq(), p));
    }
    if (params.empty()) continue;
    fused(params, grads, averages, squares, /*max_exp_avg_sqs=*/at::TensorList{}, steps, o.lr(), std::get<0>(o.betas()),
          std::get<1>(o.betas()), o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false, std::nullopt, std::nullopt);
  }
  return true;
}

}  // namespace

at::Tensor FusedSGD::step(LossClosure closure) {
  if (closure || !all_fusable(param_groups())) return SGD::step(std::move(closure));
  at::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    // The kernel takes one first-step flag per call: parameters whose momentum buffer starts now
    // (it becomes the gradient) go in a call of their own.
    std::vector<at::Tensor> params[2], grads[2], buffers[2];
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      int first = 0;
      if (o.momentum() != 0) {
        auto& slot = state_[p.unsafeGetTensorImpl()];
        if (!slot) {
          auto fresh = std::make_unique<torch::optim::SGDParamState>();
          fresh->momentum_buffer(at::empty_like(p, at::MemoryFormat::Preserve));
          slot = std::move(fresh);
          first = 1;
        }
        buffers[first].push_back(in_layout_of(static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer(), p));
      }
      params[first].push_back(p);
      grads[first].push_back(p.grad());
    }
    for (int first = 0; first < 2; ++first)
      if (!params[first].empty())
        at::_fused_sgd_(params[first], grads[first], buffers[first], o.weight_decay(), o.momentum(), o.lr(), o.dampening(), o.nesterov(),
                        /*maximize=*/false, /*is_first_step=*/first == 1);
  }
  return {};
}

at::Tensor FusedAdam::step(LossClosure closure) {
  const auto kernel = [](auto&&... args) { at::_fused_adam_(std::forward<decltype(args)>(args)...); };
  if (fused_adam_step<torch::optim::AdamOptions, torch::optim::AdamParamState>(param_groups(), state_, closure, kernel)) return {};
  return Adam::step(std::move(closure));
}

at::Tensor FusedAdamW::step(LossClosure closure) {
  const auto kernel = [](auto&&... args) { at::_fused_adamw_(std::forward<decltype(args)>(args)...); };
  if (fused_adam_step<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(param_groups(), state_, closure, kernel)) return {};
  return AdamW::step(std::move(closure));
}

}  // namespace gputrain::train
