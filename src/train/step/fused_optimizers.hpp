#pragma once
// SGD, Adam and AdamW whose step is one fused ATen kernel over all parameters (_fused_sgd_,
// _fused_adam_, _fused_adamw_; CPU and CUDA) instead of LibTorch's three to eight elementwise ops per
// parameter. Same options, same state objects (so checkpoints read and write as LibTorch's do), same
// arithmetic up to float rounding. A step the kernels cannot take (a closure, mixed devices or
// dtypes, layouts that differ between a parameter and its gradient, amsgrad) falls back to
// LibTorch's own step.
//
// The Adam kernels read each parameter's step count from a float tensor; it is made from the
// LibTorch state's integer `step` (what checkpoints keep) at each step, one for all parameters at
// the same count, so there is no second copy of the count to keep in sync.

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace gputrain::train {

class FusedSGD final : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;
  at::Tensor step(LossClosure closure = nullptr) override;
};

class FusedAdam final : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  at::Tensor step(LossClosure closure = nullptr) override;
};

class FusedAdamW final : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  at::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace gputrain::train
