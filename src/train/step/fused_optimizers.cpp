#include "fused_optimizers.hpp"

#include <ATen/ATen.h>

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

std::optional<at::Tensor> optional(const at::Tensor& t) { return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt; }

void fused_adam(const torch::optim::AdamOptions&, std::vector<at::Tensor>* lists, const at::Tensor& lr, const std::tuple<double, double>& b,
                double wd, double eps, const at::Tensor& found_inf) {
  at::_fused_adam_(lists[0], lists[1], lists[2], lists[3], at::TensorList{}, lists[4], lr, std::get<0>(b), std::get<1>(b), wd, eps, false,
                   false, std::nullopt, optional(found_inf));
}

void fused_adam(const torch::optim::AdamWOptions&, std::vector<at::Tensor>* lists, const at::Tensor& lr,
                const std::tuple<double, double>& b, double wd, double eps, const at::Tensor& found_inf) {
  at::_fused_adamw_(lists[0], lists[1], lists[2], lists[3], at::TensorList{}, lists[4], lr, std::get<0>(b), std::get<1>(b), wd, eps, false,
                    false, std::nullopt, optional(found_inf));
}

}  // namespace

DeviceStepped* device_stepped(torch::optim::Optimizer& optimizer) { return dynamic_cast<DeviceStepped*>(&optimizer); }

const at::Tensor& DeviceInputs::lr_tensor(std::size_t g, const torch::optim::OptimizerParamGroup& group, const at::Tensor& like) {
  if (lrs_.size() <= g) {
    lrs_.resize(g + 1);
    lr_values_.resize(g + 1, 0.0);
  }
  const double lr = group.options().get_lr();
  if (!lrs_[g].defined() || lrs_[g].device() != like.device()) {
    lrs_[g] = at::full({}, lr, at::TensorOptions().dtype(at::kFloat).device(like.device()));
    lr_values_[g] = lr;
  } else if (lr_values_[g] != lr) {
    lrs_[g].fill_(lr);  // a launch with the value as its argument: no sync
    lr_values_[g] = lr;
  }
  return lrs_[g];
}

void DeviceInputs::sync_lr_of(std::vector<torch::optim::OptimizerParamGroup>& groups) {
  for (std::size_t g = 0; g < groups.size() && g < lrs_.size(); ++g)
    if (lrs_[g].defined()) lr_tensor(g, groups[g], lrs_[g]);
}

bool DeviceInputs::skip_on_host() const { return found_inf_.defined() && found_inf_.item<float>() != 0.0f; }

at::Tensor FusedSGD::step(LossClosure closure) {
  fused_ = !closure && all_fusable(param_groups());
  if (!fused_) return skip_on_host() ? at::Tensor() : SGD::step(std::move(closure));
  at::NoGradGuard no_grad;
  auto& groups = param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(groups[g].options());
    // The kernel takes one first-step flag per call: parameters whose momentum buffer starts now
    // (it becomes the gradient) go in a call of their own. The buffer starts at zero, not empty:
    // a first step the found-inf flag skips leaves it zero, and the next step's momentum * 0 +
    // gradient is the first step's buffer exactly (no dampening).
    std::vector<at::Tensor> params[2], grads[2], buffers[2];
    for (auto& p : groups[g].params()) {
      if (!p.grad().defined()) continue;
      int first = 0;
      if (o.momentum() != 0) {
        auto& slot = state_[p.unsafeGetTensorImpl()];
        if (!slot) {
          auto fresh = std::make_unique<torch::optim::SGDParamState>();
          fresh->momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
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
        at::_fused_sgd_(params[first], grads[first], buffers[first], o.weight_decay(), o.momentum(),
                        lr_tensor(g, groups[g], params[first][0]), o.dampening(), o.nesterov(), /*maximize=*/false,
                        /*is_first_step=*/first == 1, std::nullopt, optional(found_inf_));
  }
  return {};
}

template <typename Base, typename Options, typename State>
at::Tensor FusedAdamBase<Base, Options, State>::step(typename Base::LossClosure closure) {
  auto& groups = this->param_groups();
  fused_ = !closure && all_fusable(groups);
  for (const auto& group : groups)
    if (static_cast<const Options&>(group.options()).amsgrad()) fused_ = false;
  if (!fused_) {
    flush_host_state();  // LibTorch's step counts on from its own integers
    steps_.clear();
    return skip_on_host() ? at::Tensor() : Base::step(std::move(closure));
  }
  at::NoGradGuard no_grad;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& o = static_cast<const Options&>(groups[g].options());
    std::vector<at::Tensor> lists[5];  // parameters, gradients, first and second moments, step counts
    for (auto& p : groups[g].params()) {
      if (!p.grad().defined()) continue;
      auto& slot = this->state_[p.unsafeGetTensorImpl()];
      if (!slot) {
        auto fresh = std::make_unique<State>();
        fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<State&>(*slot);
      auto& count = steps_[p.unsafeGetTensorImpl()];
      if (!count.defined())
        count = at::full({}, static_cast<double>(state.step()), at::TensorOptions().dtype(at::kFloat).device(p.device()));
      lists[0].push_back(p);
      lists[1].push_back(p.grad());
      lists[2].push_back(in_layout_of(state.exp_avg(), p));
      lists[3].push_back(in_layout_of(state.exp_avg_sq(), p));
      lists[4].push_back(count);
    }
    if (lists[0].empty()) continue;
    // As PyTorch's capturable Adam: count every step, then take back the ones the flag skipped.
    at::_foreach_add_(lists[4], 1.0);
    fused_adam(o, lists, lr_tensor(g, groups[g], lists[0][0]), o.betas(), o.weight_decay(), o.eps(), found_inf_);
    if (found_inf_.defined()) at::_foreach_sub_(lists[4], std::vector<at::Tensor>(lists[4].size(), found_inf_.reshape({})));
  }
  return {};
}

template <typename Base, typename Options, typename State>
void FusedAdamBase<Base, Options, State>::flush_host_state() {
  if (steps_.empty()) return;
  std::vector<void*> keys;
  std::vector<at::Tensor> counts;
  for (const auto& [key, count] : steps_) {
    keys.push_back(key);
    counts.push_back(count);
  }
  const auto host = at::stack(counts).to(at::kCPU, at::kDouble);  // one copy for all
  const auto* values = host.template data_ptr<double>();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto found = this->state_.find(keys[i]);
    if (found != this->state_.end()) static_cast<State&>(*found->second).step(static_cast<std::int64_t>(values[i]));
  }
}

template <typename Base, typename Options, typename State>
void FusedAdamBase<Base, Options, State>::save(torch::serialize::OutputArchive& archive) const {
  const_cast<FusedAdamBase*>(this)->flush_host_state();  // the integers save() writes
  Base::save(archive);
}

template <typename Base, typename Options, typename State>
void FusedAdamBase<Base, Options, State>::load(torch::serialize::InputArchive& archive) {
  Base::load(archive);
  drop_device_state();  // the next step starts from the loaded integers
}

template class FusedAdamBase<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState>;
template class FusedAdamBase<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState>;

}  // namespace gputrain::train
