#include "cpu_linear.hpp"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/custom_function.h>

namespace gputrain::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor rows_of(const at::Tensor& t) { return t.reshape({-1, t.size(-1)}).contiguous(); }

at::Tensor product(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, CpuMatmul library) {
  const auto rows = rows_of(input);
  auto out = bias.defined() ? addmm(bias, rows, weight.t(), library) : matmul(rows, weight.t(), library);
  auto shape = input.sizes().vec();
  shape.back() = weight.size(0);
  return out.view(shape);
}

// The products of backward on the same library as forward's: input's gradient g @ W, weight's
// g^T @ x, bias's the sum of g's rows (what at::linear's backward computes, with MKL's products).
struct LinearOnLibrary : torch::autograd::Function<LinearOnLibrary> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                            int64_t library) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["library"] = library;
    return product(input, weight, bias, static_cast<CpuMatmul>(library));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &input = saved[0], &weight = saved[1];
    const auto library = static_cast<CpuMatmul>(ctx->saved_data["library"].toInt());
    const auto g = rows_of(grads[0]);
    at::Tensor input_grad, weight_grad, bias_grad;
    if (ctx->needs_input_grad(0)) input_grad = matmul(g, weight, library).view(input.sizes());
    if (ctx->needs_input_grad(1)) weight_grad = matmul(g.t(), rows_of(input), library);
    if (ctx->needs_input_grad(2)) bias_grad = g.sum(0);
    return {input_grad, weight_grad, bias_grad, at::Tensor()};
  }
};

bool is_cpu_fp32(const at::Tensor& t) { return !t.defined() || (t.device().is_cpu() && t.scalar_type() == at::kFloat); }

}  // namespace

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, CpuMatmul library) {
  const bool onednn = library == CpuMatmul::onednn && is_cpu_fp32(input) && is_cpu_fp32(weight) && is_cpu_fp32(bias) && input.dim() >= 2 &&
                      !at::autocast::is_autocast_enabled(at::kCPU);
  if (!onednn) return at::linear(input, weight, bias);
  const bool records =
      at::GradMode::is_enabled() && (input.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
  if (!records) return product(input, weight, bias, library);
  // An autograd function's inputs must be defined tensors: no bias is a zero one without a gradient.
  const auto bias_or_zero = bias.defined() ? bias : at::zeros({weight.size(0)}, weight.options());
  return LinearOnLibrary::apply(input, weight, bias_or_zero, static_cast<int64_t>(library));
}

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  return linear(input, weight, bias, cpu_matmul_for_this_machine());
}

}  // namespace gputrain::train
