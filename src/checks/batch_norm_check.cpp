// functional.N.batch_norm: gputrain's own batch-norm kernels, which a ResNet trains with on a GPU
// (src/train/models/layers/batch_norm_kernels.cu), against ATen's batch norm, add and ReLU in fp32
// on the same values: a residual block's end, forward and backward, as training runs it.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/function.h>
#include <torch/nn/modules/batchnorm.h>

#include <string>

#include "check_sets.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/sync_batch_norm.hpp"
#include "tensor_options.hpp"

namespace gputrain::checks {
namespace {

// The largest difference between `mine` and `expected`, relative to expected's largest magnitude.
double relative_gap(const at::Tensor& mine, const at::Tensor& expected) {
  const double scale = std::max(expected.abs().max().item<double>(), 1e-6);
  return (mine.to(at::kFloat) - expected).abs().max().item<double>() / scale;
}

}  // namespace

Result check_batch_norm_kernels(int index, at::ScalarType dtype) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  at::manual_seed(0);
  constexpr std::int64_t kChannels = 64;
  const auto shape = std::vector<std::int64_t>{32, kChannels, 16, 16};
  const auto x = (at::randn(shape, on_gpu(index)) * 3 + 1.5).to(dtype).contiguous(at::MemoryFormat::ChannelsLast);
  const auto residual = at::randn(shape, on_gpu(index)).to(dtype).contiguous(at::MemoryFormat::ChannelsLast);
  train::SyncableBatchNorm2d mine(kChannels);
  torch::nn::BatchNorm2d reference(kChannels);
  mine->to(x.device());
  reference->to(x.device());
  const auto weight = at::rand({kChannels}, on_gpu(index)) + 0.5, bias = at::randn({kChannels}, on_gpu(index));
  for (auto* w : {&mine->weight, &reference->weight}) w->set_data(weight.clone());
  for (auto* b : {&mine->bias, &reference->bias}) b->set_data(bias.clone());

  const auto x_mine = x.detach().requires_grad_(true), r_mine = residual.detach().requires_grad_(true);
  const auto y_mine = mine->forward_add_relu(x_mine, r_mine);
  const std::string ran = y_mine.grad_fn() ? y_mine.grad_fn()->name() : "";
  if (ran.find("FusedBatchNorm") == std::string::npos)
    return skip("training runs LibTorch's batch norm here (" + (ran.empty() ? std::string("no autograd node") : ran) +
                "): GPUTRAIN_BATCH_NORM=aten, or a layout the kernels do not take");
  const auto x_ref = x.detach().to(at::kFloat).requires_grad_(true), r_ref = residual.detach().to(at::kFloat).requires_grad_(true);
  const auto y_ref = at::relu(reference->forward(x_ref) + r_ref);
  const auto dy = at::randn_like(y_ref).to(dtype);
  y_mine.backward(dy);
  y_ref.backward(dy.to(at::kFloat));

  // bf16 keeps 8 bits, fp16 11: the rounding of the values written, not of the fp32 sums.
  const double rounding = dtype == at::kHalf ? 4e-3 : 2e-2;
  const struct {
    const char* what;
    double gap, bound;
  } compared[] = {
      {"output", relative_gap(y_mine, y_ref), rounding},
      {"input gradient", relative_gap(x_mine.grad(), x_ref.grad()), rounding},
      {"residual gradient", relative_gap(r_mine.grad(), r_ref.grad()), rounding},
      {"weight gradient", relative_gap(mine->weight.grad(), reference->weight.grad()), 1e-3},
      {"bias gradient", relative_gap(mine->bias.grad(), reference->bias.grad()), 1e-3},
      {"running mean", relative_gap(mine->running_mean, reference->running_mean), 1e-4},
      {"running variance", relative_gap(mine->running_var, reference->running_var), 1e-4},
  };
  double worst = 0;
  for (const auto& c : compared) {
    worst = std::max(worst, c.gap / c.bound);
    if (c.gap > c.bound)
      return fail("gputrain's batch-norm kernels: the " + std::string(c.what) + " differs from ATen's by " +
                      core::format_fixed(c.gap * 100, 3) + " % of its largest value (at most " + core::format_fixed(c.bound * 100, 3) +
                      " % expected)",
                  "train with GPUTRAIN_BATCH_NORM=aten (LibTorch's kernels) on this GPU, and report this with `gputrain --version`",
                  {{"worst_share_of_bound", c.gap / c.bound, "", {}}});
  }
  const std::string name = dtype == at::kHalf ? "fp16" : "bf16";
  return pass("gputrain's batch-norm kernels match ATen on a " + name + " residual block (32x64x16x16, forward and backward; worst " +
                  core::format_fixed(worst * 100, 0) + " % of the rounding bound)",
              {{"worst_share_of_bound", worst, "", {}}});
}

}  // namespace gputrain::checks
