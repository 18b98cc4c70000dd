#pragma once
// Dropout for the models' forward passes: at::dropout, except on the CPU in fp32, where the mask
// comes from xoshiro128+ generators in vector lanes. at::dropout's CPU mask (bernoulli_) is
// drawn by one thread from the generator's Mersenne twister, except on Intel
// processors where LibTorch takes MKL's generator: ~4 ns per element on the Zen 5 CI machine
// (2026-11-26), about 40 % of the built-in transformer's CPU step; these lanes take ~0.6 ns. The
// mask depends on the seed alone, not on threads; its seed is drawn from LibTorch's default CPU
// generator, so train.seed decides it as it decides at::dropout's.

#include <ATen/core/Tensor.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include <ostream>

namespace gputrain::train {

/// Zeroes each element with probability p and scales the others by 1 / (1 - p) in training; the
/// input itself otherwise (as at::dropout).
at::Tensor cpu_dropout(const at::Tensor& input, double p, bool training);

/// What cpu_dropout multiplies a CPU fp32 input by (0 < p < 1): 1 / (1 - p) with
/// probability 1 - p, else 0, shaped as `like`. The hand-written MLP step draws it as autograd's
/// path does, so both get the same mask.
at::Tensor dropout_noise(const at::Tensor& like, double p);

/// cpu_dropout as a module, for the built-in models' nn::Sequential stacks (in place of
/// nn::Dropout, which calls at::dropout).
struct CpuDropoutImpl : torch::nn::Cloneable<CpuDropoutImpl> {
  explicit CpuDropoutImpl(double probability) : p(probability) {}
  void reset() override {}
  at::Tensor forward(const at::Tensor& input) { return cpu_dropout(input, p, is_training()); }
  void pretty_print(std::ostream& stream) const override { stream << "gputrain::CpuDropout(p=" << p << ")"; }
  double p;
};
TORCH_MODULE(CpuDropout);

}  // namespace gputrain::train
