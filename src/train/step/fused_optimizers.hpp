#pragma once
// SGD, Adam and AdamW whose step is one fused ATen kernel over all parameters (_fused_sgd_,
// _fused_adam_, _fused_adamw_; CPU and CUDA) instead of LibTorch's three to eight elementwise ops per
// parameter. Same options, same state objects (so checkpoints read and write as LibTorch's do), same
// arithmetic up to float rounding. A step the kernels cannot take (a closure, mixed devices or
// dtypes, layouts that differ between a parameter and its gradient, amsgrad) falls back to
// LibTorch's own step.
//
// Their steps read nothing from the host (DeviceStepped, optimizer.hpp): the learning rate from a
// device tensor per group, the GradScaler's verdict from its found-inf flag, and Adam's step counts
// from device tensors per parameter (PyTorch's capturable=True layout), which are copied into
// LibTorch's integer `step` only when the state is saved.

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <functional>
#include <optional>
#include <unordered_set>
#include <vector>

#include "gputrain/train/optimizer.hpp"

namespace gputrain::train {

/// What the three share: each group's learning rate on the device, the found-inf flag, and
/// whether the last step was fused.
class DeviceInputs : public DeviceStepped {
 public:
  void skip_when(at::Tensor found_inf) override { found_inf_ = std::move(found_inf); }
  bool last_step_fused() const override { return fused_; }
  std::string why_not_fused() const override { return why_not_fused_; }
  void step_only(const std::vector<at::Tensor>& own) override;

 protected:
  // Group `g`'s learning rate as a device scalar, written first when the options changed.
  const at::Tensor& lr_tensor(std::size_t g, const torch::optim::OptimizerParamGroup& group, const at::Tensor& like);
  // The fallback (LibTorch's step) reads the host: it skips here when the flag says so.
  bool skip_on_host() const;
  void sync_lr_of(std::vector<torch::optim::OptimizerParamGroup>& groups);
  // Whether this optimizer updates `p` (false: another rank owns it).
  bool steps(const at::Tensor& p) const { return !own_ || own_->count(p.unsafeGetTensorImpl()) > 0; }
  // LibTorch's step, which updates every parameter with a gradient, with the others' hidden from it.
  at::Tensor fallback_step(std::vector<torch::optim::OptimizerParamGroup>& groups, const std::function<at::Tensor()>& step);

  std::vector<at::Tensor> lrs_;
  std::vector<double> lr_values_;  // what each of lrs_ holds
  at::Tensor found_inf_;
  bool fused_ = true;
  std::string why_not_fused_;                                      // "" when fused_
  std::optional<std::unordered_set<const c10::TensorImpl*>> own_;  // unset: every parameter
};

class FusedSGD final : public torch::optim::SGD, public DeviceInputs {
 public:
  using torch::optim::SGD::SGD;
  at::Tensor step(LossClosure closure = nullptr) override;
  void sync_lr() override { sync_lr_of(param_groups()); }
};

/// Adam and AdamW: `Base` is LibTorch's optimizer, `Options` and `State` its types.
template <typename Base, typename Options, typename State>
class FusedAdamBase final : public Base, public DeviceInputs {
 public:
  using Base::Base;
  at::Tensor step(typename Base::LossClosure closure = nullptr) override;
  void sync_lr() override { sync_lr_of(this->param_groups()); }
  void flush_host_state() override;
  void drop_device_state() override { steps_.clear(); }
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  // Each parameter's step count as a float device scalar (the kernels read them), by parameter.
  ska::flat_hash_map<void*, at::Tensor> steps_;
};

using FusedAdam = FusedAdamBase<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState>;
using FusedAdamW = FusedAdamBase<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState>;

}  // namespace gputrain::train
