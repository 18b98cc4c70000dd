// Training-mode batch norm, with a block's residual add and ReLU, in gputrain's NHWC kernels
// (batch_norm_kernels.cu) as one autograd function: three kernels forward and three backward (a
// ResNet-18 step launched 331 kernels with them, 396 with ATen's batch norm, add and ReLU, on an
// H200: docs/benchmarks.md). Where the kernels do not apply
// (CPU, fp32, NCHW, odd channel counts), or GPUTRAIN_BATCH_NORM=aten says so, the caller runs the
// composite ops instead.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/autograd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "batch_norm_kernels.hpp"
#include "gputrain/core/env.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/train/sync_batch_norm.hpp"
#include "layer_switches.hpp"

namespace gputrain::train {
namespace {

namespace kernels = batch_norm_kernels;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool aligned(const at::Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0; }

bool channels_last_like(const at::Tensor& t, const at::Tensor& input) {
  return t.sizes() == input.sizes() && t.scalar_type() == input.scalar_type() && t.device() == input.device() &&
         t.is_contiguous(at::MemoryFormat::ChannelsLast) && aligned(t);
}

bool float_on(const at::Tensor& t, const at::Tensor& input) {
  return t.scalar_type() == at::kFloat && t.device() == input.device() && t.is_contiguous();
}

std::optional<kernels::Layout> layout_of(const at::Tensor& input) {
  if (!input.is_cuda() || input.dim() != 4 || !input.is_contiguous(at::MemoryFormat::ChannelsLast) || !aligned(input)) return std::nullopt;
  kernels::Layout layout;
  if (input.scalar_type() == at::kBFloat16)
    layout.element = kernels::Element::bfloat16;
  else if (input.scalar_type() == at::kHalf)
    layout.element = kernels::Element::float16;
  else
    return std::nullopt;
  layout.channels = static_cast<int>(input.size(1));
  layout.rows = input.numel() / input.size(1);
  if (!kernels::supports(layout)) return std::nullopt;
  return layout;
}

bool layer_fits(const BatchNormTensors& layer, const at::Tensor& input) {
  const auto& o = layer.options;
  if (o.affine() && !(float_on(layer.weight, input) && float_on(layer.bias, input))) return false;
  // Without momentum ATen's factor is 1 / num_batches_tracked, read on the host: left to ATen.
  if (o.track_running_stats() && !(o.momentum().has_value() && float_on(layer.running_mean, input) && float_on(layer.running_var, input)))
    return false;
  // num_batches_tracked is counted by the forward pass itself: an int64 beside the input.
  const auto& n = layer.num_batches_tracked;
  return !(o.track_running_stats() && n.defined()) || (n.scalar_type() == at::kLong && n.device() == input.device());
}

float* float_ptr(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

at::Tensor workspace(const kernels::Layout& layout, const at::Tensor& input) {
  kernels::Plan plan;
  if (const char* error = kernels::plan_on_device(layout, plan))
    throw Error(std::string("gputrain's batch-norm kernels could not size their grid: ") + error,
                "run with GPUTRAIN_BATCH_NORM=aten to use LibTorch's batch norm; `gputrain verify` checks the GPU");
  return at::empty({plan.workspace_floats}, input.options().dtype(at::kFloat));
}

void check_launch(const char* error, const char* pass) {
  if (error != nullptr)
    throw Error(std::string("gputrain's batch-norm kernels did not start (") + pass + "): " + error,
                "run with GPUTRAIN_BATCH_NORM=aten to use LibTorch's batch norm, and report the model and GPU");
}

// A gradient as the kernels read it: the input's type, channels-last, 16-byte aligned.
at::Tensor as_kernel_operand(const at::Tensor& grad, const at::Tensor& input) {
  auto g = grad.to(input.scalar_type()).contiguous(at::MemoryFormat::ChannelsLast);
  return aligned(g) ? g : g.clone(at::MemoryFormat::ChannelsLast);
}

class FusedBatchNormFunction : public torch::autograd::Function<FusedBatchNormFunction> {
 public:
  // The optional tensors are absent, not undefined: autograd describes every tensor input by its
  // device. `forked` (with relu): a second output, the same memory, for a second reader (ForkedOutput).
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input, const std::optional<at::Tensor>& residual_input,
                               const std::optional<at::Tensor>& weight_input, const std::optional<at::Tensor>& bias_input,
                               const BatchNormTensors* layer, bool relu, bool forked) {
    const auto residual = residual_input.value_or(at::Tensor()), weight = weight_input.value_or(at::Tensor());
    const auto bias = bias_input.value_or(at::Tensor());
    const auto layout = *layout_of(input);
    const c10::cuda::CUDAGuard on_device(input.device());
    auto output = at::empty_like(input, at::MemoryFormat::ChannelsLast);
    const auto statistics = at::empty({2, input.size(1)}, input.options().dtype(at::kFloat));
    kernels::Forward args;
    args.input = input.data_ptr();
    args.residual = residual.defined() ? residual.data_ptr() : nullptr;
    args.output = output.data_ptr();
    args.weight = float_ptr(weight);
    args.bias = float_ptr(bias);
    args.running_mean = float_ptr(layer->running_mean);
    args.running_var = float_ptr(layer->running_var);
    args.save_mean = statistics[0].data_ptr<float>();
    args.save_invstd = statistics[1].data_ptr<float>();
    args.eps = layer->options.eps();
    args.momentum = layer->options.momentum().value_or(0.0);
    args.relu = relu;
    if (layer->options.track_running_stats() && layer->num_batches_tracked.defined())
      args.batches_tracked = layer->num_batches_tracked.data_ptr<std::int64_t>();  // layer_fits checked where it lives
    auto scratch = workspace(layout, input);
    check_launch(kernels::forward(layout, args, scratch.data_ptr<float>(), at::cuda::getCurrentCUDAStream().stream()), "forward");
    ctx->save_for_backward({input, relu ? output : at::Tensor(), weight, statistics});
    ctx->saved_data["relu"] = relu;
    ctx->saved_data["residual"] = residual.defined();
    if (!forked) return {output};
    ctx->set_materialize_grads(false);  // a reader that is not used sends no gradient: no zeros read
    return {output, output.alias()};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &input = saved[0], &output = saved[1], &weight = saved[2], &statistics = saved[3];
    const bool relu = ctx->saved_data["relu"].toBool(), has_residual = ctx->saved_data["residual"].toBool();
    // A forked output's readers' gradients, either of which may be absent.
    at::Tensor first = grads[0], second = grads.size() > 1 ? grads[1] : at::Tensor();
    if (!first.defined()) std::swap(first, second);
    if (!first.defined()) return variable_list(7);  // one for each of forward's inputs
    const auto layout = *layout_of(input);
    const c10::cuda::CUDAGuard on_device(input.device());
    const auto grad_output = as_kernel_operand(first, input);
    const auto grad_other = second.defined() ? as_kernel_operand(second, input) : at::Tensor();
    auto grad_input = at::empty_like(input, at::MemoryFormat::ChannelsLast);
    // With ReLU and a residual, or two gradients, the first pass writes the masked gradient for the
    // last: the residual's gradient, or scratch.
    at::Tensor grad_residual;
    if (relu && (has_residual || grad_other.defined()))
      grad_residual = at::empty_like(input, at::MemoryFormat::ChannelsLast);
    else if (has_residual)
      grad_residual = grad_output;
    const auto affine_grads = at::empty({2, input.size(1)}, input.options().dtype(at::kFloat));
    kernels::Backward args;
    args.grad_output = grad_output.data_ptr();
    args.grad_output_other = grad_other.defined() ? grad_other.data_ptr() : nullptr;
    args.output = relu ? output.data_ptr() : nullptr;
    args.input = input.data_ptr();
    args.grad_input = grad_input.data_ptr();
    args.grad_residual = relu && grad_residual.defined() ? grad_residual.data_ptr() : nullptr;
    args.weight = float_ptr(weight);
    args.save_mean = statistics[0].data_ptr<float>();
    args.save_invstd = statistics[1].data_ptr<float>();
    args.grad_weight = affine_grads[0].data_ptr<float>();
    args.grad_bias = affine_grads[1].data_ptr<float>();
    args.relu = relu;
    auto scratch = workspace(layout, input);
    check_launch(kernels::backward(layout, args, scratch.data_ptr<float>(), at::cuda::getCurrentCUDAStream().stream()), "backward");
    const bool affine = weight.defined();
    return {grad_input,
            has_residual ? grad_residual : at::Tensor(),
            affine ? affine_grads[0] : at::Tensor(),
            affine ? affine_grads[1] : at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

// The layer's tensors and settings, if the kernels take this input.
bool kernels_take(const at::Tensor& input, const at::Tensor& residual, const BatchNormTensors& layer) {
  if (!batch_norm_kernels_wanted()) return false;
  const auto layout = layout_of(input);  // first: on the CPU it says no at once
  return layout && layer_fits(layer, input) && (!residual.defined() || channels_last_like(residual, input));
}

std::optional<at::Tensor> given(const at::Tensor& t) { return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt; }

}  // namespace

// GPUTRAIN_BATCH_NORM=aten keeps ATen's kernels: for comparing the two (bench/).
bool batch_norm_kernels_wanted() {
  static const bool wanted = !core::env_choice("GPUTRAIN_BATCH_NORM", {"aten"}, "gputrain's kernels where they apply");
  return wanted;
}

std::optional<at::Tensor> fused_batch_norm(const at::Tensor& input, const at::Tensor& residual, const BatchNormTensors& layer, bool relu) {
  if (!kernels_take(input, residual, layer)) return std::nullopt;
  return FusedBatchNormFunction::apply(input, given(residual), given(layer.weight), given(layer.bias), &layer, relu, false)[0];
}

std::optional<ForkedOutput> fused_batch_norm_forked(const at::Tensor& input, const at::Tensor& residual, const BatchNormTensors& layer) {
  if (!kernels_take(input, residual, layer)) return std::nullopt;
  auto outputs = FusedBatchNormFunction::apply(input, given(residual), given(layer.weight), given(layer.bias), &layer, true, true);
  return ForkedOutput{outputs[0], outputs[1]};
}

}  // namespace gputrain::train
