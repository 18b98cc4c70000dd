#pragma once
// A linear layer's product for the models' forward passes: at::linear, except where this machine's
// CPU products run faster on oneDNN (cpu_matmul.hpp: AMD with AVX-512), where an fp32 CPU input
// takes oneDNN's products forward and in backward (an autograd function of its own). Its results
// then differ from at::linear's in the last bits (another summation order), as the hand-written
// MLP step's do. Double backward through it is not supported.

#include <ATen/core/Tensor.h>

#include "cpu_matmul.hpp"

namespace gputrain::train {

/// input @ weight^T + bias (bias may be undefined), as at::linear.
at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);

/// The same with the library of the products chosen (tests compare the two).
at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, CpuMatmul library);

}  // namespace gputrain::train
