#include "fused_optimizers.hpp"

#include <ATen/ATen.h>

#include <utility>
#include <vector>

namespace gputrain::train {
namespace {

// Whether two dense tensors lay their elements out in the same order: equal strides in every
// dimension longer than one (a size-1 dimension's stride addresses nothing; cuDNN's gradients of
// channels_last 1x1 convolutions differ from their weights there).
bool same_element_order(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  for (std::int64_t d = 0; d < a.dim(); ++d)
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  return true;
}

// Why the fused kernels cannot update this group, or "" when they can: they walk parameter,
// gradient and state buffers as flat arrays of one dtype on one device, in the same element order.
std::string unfusable(const torch::optim::OptimizerParamGroup& group) {
  const at::Tensor* first = nullptr;
  std::size_t index = 0;
  for (const auto& p : group.params()) {
    const auto& grad = p.grad();
    const auto which = [&p, i = index++] { return "parameter " + std::to_string(i) + " " + c10::str(p.sizes()); };
    if (!grad.defined()) continue;
    if (!at::isFloatingType(p.scalar_type()) || p.is_sparse() || grad.is_sparse()) return which() + " is not a dense float tensor";
    if (!p.is_non_overlapping_and_dense() || !grad.is_non_overlapping_and_dense())
      return which() + " or its gradient is not dense (strides " + c10::str(p.strides()) + ", " + c10::str(grad.strides()) + ")";
    if (!same_element_order(p, grad))
      return which() + " and its gradient are laid out differently (strides " + c10::str(p.strides()) + " and " + c10::str(grad.strides()) +
             ")";
    if (grad.scalar_type() != p.scalar_type()) return which() + " has a gradient of another dtype";
    if (first == nullptr) first = &p;
    if (p.device() != first->device() || p.scalar_type() != first->scalar_type())
      return which() + " differs in device or dtype from the group's first";
  }
  return {};
}

// The gradient with its parameter's strides (the kernels check them for equality): a view, as
// the two differ at most in size-1 dimensions (unfusable).
at::Tensor grad_of(const at::Tensor& p) {
  const auto& grad = p.grad();
  return grad.strides() == p.strides() ? grad : grad.as_strided(p.sizes(), p.strides(), grad.storage_offset());
}

// The kernels walk a state tensor in its parameter's memory order: one restored from a checkpoint
// in another layout is re-laid out once (values kept).
at::Tensor& in_layout_of(at::Tensor& state, const at::Tensor& param) {
  if (state.strides() != param.strides()) state = at::empty_like(param, at::MemoryFormat::Preserve).copy_(state);
  return state;
}

std::string why_unfusable(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (auto why = unfusable(groups[g]); !why.empty()) return (groups.size() > 1 ? "group " + std::to_string(g) + ", " : "") + why;
  return {};
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

void DeviceInputs::step_only(const std::vector<at::Tensor>& own) {
  own_.emplace();
  for (const auto& p : own) own_->insert(p.unsafeGetTensorImpl());
}

at::Tensor DeviceInputs::fallback_step(std::vector<torch::optim::OptimizerParamGroup>& groups, const std::function<at::Tensor()>& step) {
  if (skip_on_host()) return {};
  std::vector<std::pair<at::Tensor, at::Tensor>> hidden;  // parameter, gradient
  for (auto& group : groups)
    for (auto& p : group.params())
      if (p.grad().defined() && !steps(p)) hidden.emplace_back(p, std::exchange(p.mutable_grad(), at::Tensor()));
  struct Restore {
    std::vector<std::pair<at::Tensor, at::Tensor>>& hidden;
    ~Restore() {
      for (auto& [p, grad] : hidden) p.mutable_grad() = std::move(grad);
    }
  } restore{hidden};
  return step();
}

at::Tensor FusedSGD::step(LossClosure closure) {
  why_not_fused_ = closure ? "a closure asks for LibTorch's step" : why_unfusable(param_groups());
  fused_ = why_not_fused_.empty();
  if (!fused_) return fallback_step(param_groups(), [&] { return SGD::step(std::move(closure)); });
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
      if (!p.grad().defined() || !steps(p)) continue;
      int first = 0;
      if (o.momentum() != 0) {
        auto slot = state_.find(p.unsafeGetTensorImpl());
        if (slot == state_.end()) {  // made whole before it is stored: an out-of-memory error leaves no empty entry
          auto fresh = std::make_unique<torch::optim::SGDParamState>();
          fresh->momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
          slot = state_.emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
          first = 1;
        }
        buffers[first].push_back(in_layout_of(static_cast<torch::optim::SGDParamState&>(*slot->second).momentum_buffer(), p));
      }
      params[first].push_back(p);
      grads[first].push_back(grad_of(p));
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
  why_not_fused_ = closure ? "a closure asks for LibTorch's step" : why_unfusable(groups);
  for (const auto& group : groups)
    if (static_cast<const Options&>(group.options()).amsgrad()) why_not_fused_ = "amsgrad has no fused kernel";
  fused_ = why_not_fused_.empty();
  if (!fused_) {
    flush_host_state();  // LibTorch's step counts on from its own integers
    steps_.clear();
    return fallback_step(groups, [&] { return Base::step(std::move(closure)); });
  }
  at::NoGradGuard no_grad;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& o = static_cast<const Options&>(groups[g].options());
    std::vector<at::Tensor> lists[5];  // parameters, gradients, first and second moments, step counts
    for (auto& p : groups[g].params()) {
      if (!p.grad().defined() || !steps(p)) continue;
      auto slot = this->state_.find(p.unsafeGetTensorImpl());
      if (slot == this->state_.end()) {  // made whole before it is stored: an out-of-memory error leaves no empty entry
        auto fresh = std::make_unique<State>();
        fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        slot = this->state_.emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
      }
      auto& state = static_cast<State&>(*slot->second);
      auto& count = steps_[p.unsafeGetTensorImpl()];
      if (!count.defined())
        count = at::full({}, static_cast<double>(state.step()), at::TensorOptions().dtype(at::kFloat).device(p.device()));
      lists[0].push_back(p);
      lists[1].push_back(grad_of(p));
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
