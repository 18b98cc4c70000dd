// gputrain's batch-norm kernels (src/train/models/layers/batch_norm_kernels.cu) against ATen's
// batch norm, add and ReLU computed in fp32 on the same bf16/fp16 values: outputs, the four
// gradients, the running statistics. Shapes cover every thread layout: 8 to 2048 channels, a
// channel count that is not a power of two, a handful of rows and ResNet-18's largest layer.
// The layouts the kernels do not take run ATen's ops. Skipped without a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/cuda.h>
#include <torch/nn/modules/batchnorm.h>

#include <string>
#include <utility>

#include "gputrain/train/sync_batch_norm.hpp"

using namespace gputrain::train;

namespace {

struct Case {
  std::int64_t n, c, h, w;
  bool residual, relu;
  at::ScalarType dtype;
};

std::string name_of(const Case& k) {
  return std::to_string(k.n) + "x" + std::to_string(k.c) + "x" + std::to_string(k.h) + "x" + std::to_string(k.w) +
         (k.residual ? " +residual" : "") + (k.relu ? " relu" : "") + (k.dtype == at::kHalf ? " fp16" : " bf16");
}

// |mine - expected| within `relative` of expected's largest magnitude (bf16 keeps 8 bits).
void expect_near(const at::Tensor& mine, const at::Tensor& expected, double relative, const std::string& what) {
  const double scale = std::max(expected.abs().max().item<double>(), 1e-6);
  const double worst = (mine.to(at::kFloat) - expected).abs().max().item<double>();
  EXPECT_LE(worst, relative * scale) << what << ": largest difference " << worst << " against a largest value " << scale;
}

// The layer's fused forward as the models call it; an add without ReLU through the function itself.
at::Tensor fused(SyncableBatchNorm2d& bn, const at::Tensor& x, const at::Tensor& residual, bool relu) {
  if (residual.defined() && !relu) {
    auto y = fused_batch_norm(x, residual, {bn->weight, bn->bias, bn->running_mean, bn->running_var, bn->num_batches_tracked, bn->options},
                              false);
    return y.value_or(at::Tensor());
  }
  if (residual.defined()) return bn->forward_add_relu(x, residual);
  return relu ? bn->forward_relu(x) : bn->forward(x);
}

void expect_kernels_match_aten(const Case& k) {
  SCOPED_TRACE(name_of(k));
  at::manual_seed(11);
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const auto shape = std::vector<std::int64_t>{k.n, k.c, k.h, k.w};
  const auto x = (at::randn(shape, cuda) * 3 + 1.5).to(k.dtype).contiguous(at::MemoryFormat::ChannelsLast);
  const auto residual = k.residual ? at::randn(shape, cuda).to(k.dtype).contiguous(at::MemoryFormat::ChannelsLast) : at::Tensor();
  SyncableBatchNorm2d mine(k.c);
  torch::nn::BatchNorm2d reference(k.c);
  mine->to(at::kCUDA);
  reference->to(at::kCUDA);
  const auto weight = at::rand({k.c}, cuda) + 0.5, bias = at::randn({k.c}, cuda);
  for (auto* w : {&mine->weight, &reference->weight}) w->set_data(weight.clone());
  for (auto* b : {&mine->bias, &reference->bias}) b->set_data(bias.clone());

  const auto x_mine = x.detach().requires_grad_(true);
  const auto r_mine = k.residual ? residual.detach().requires_grad_(true) : at::Tensor();
  const auto y_mine = fused(mine, x_mine, r_mine, k.relu);
  const std::string how = y_mine.grad_fn() ? y_mine.grad_fn()->name() : "";
  EXPECT_NE(how.find("FusedBatchNorm"), std::string::npos) << "ran " << how << ", not gputrain's kernels";

  const auto x_ref = x.detach().to(at::kFloat).requires_grad_(true);
  const auto r_ref = k.residual ? residual.detach().to(at::kFloat).requires_grad_(true) : at::Tensor();
  auto y_ref = reference->forward(x_ref);
  if (k.residual) y_ref = y_ref + r_ref;
  // ReLU through the kernels' own mask: of 16M values some lie within fp32's rounding of zero,
  // where the two computations may fall on either side and the gradients then differ by the
  // whole incoming one (the H200 found 0.39 in the largest case). The output still checks the mask.
  if (k.relu) y_ref = y_ref * (y_mine.detach() > 0).to(at::kFloat);

  const auto dy = at::randn_like(y_ref).to(k.dtype);
  y_mine.backward(dy);
  y_ref.backward(dy.to(at::kFloat));
  const double rounding = k.dtype == at::kHalf ? 4e-3 : 2e-2;
  expect_near(y_mine, y_ref, rounding, "output");
  expect_near(x_mine.grad(), x_ref.grad(), rounding, "input gradient");
  if (k.residual) expect_near(r_mine.grad(), r_ref.grad(), rounding, "residual gradient");
  expect_near(mine->weight.grad(), reference->weight.grad(), 1e-3, "weight gradient");
  expect_near(mine->bias.grad(), reference->bias.grad(), 1e-3, "bias gradient");
  expect_near(mine->running_mean, reference->running_mean, 1e-4, "running mean");
  expect_near(mine->running_var, reference->running_var, 1e-4, "running variance");
  EXPECT_EQ(mine->num_batches_tracked.item<std::int64_t>(), 1);
}

class GpuBatchNorm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible";
  }
};

}  // namespace

TEST_F(GpuBatchNorm, KernelsMatchAtenInFp32AcrossTheirThreadLayouts) {
  const Case cases[] = {
      {8, 64, 16, 16, true, true, at::kBFloat16},    // a BasicBlock's end
      {4, 128, 7, 9, false, true, at::kHalf},        // odd rows, fp16
      {2, 512, 3, 3, true, true, at::kBFloat16},     // 18 rows, 4 a block
      {3, 2048, 1, 1, false, false, at::kBFloat16},  // one row a block; a downsample's plain batch norm
      {64, 24, 32, 32, true, false, at::kBFloat16},  // 3 channel groups: 85 rows a block
      {8, 8, 2, 2, false, true, at::kHalf},          // one channel group, 32 rows
      {256, 64, 32, 32, true, true, at::kBFloat16},  // ResNet-18's first stage at batch 256
  };
  for (const auto& k : cases) expect_kernels_match_aten(k);
}

// Where the kernels do not apply the layer runs ATen's ops: fp32, NCHW, 12 channels.
TEST_F(GpuBatchNorm, LayoutsTheKernelsDoNotTakeRunAtensOps) {
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const at::Tensor inputs[] = {at::randn({4, 16, 5, 5}, cuda).contiguous(at::MemoryFormat::ChannelsLast),
                               at::randn({4, 16, 5, 5}, cuda).to(at::kBFloat16),
                               at::randn({4, 12, 5, 5}, cuda).to(at::kBFloat16).contiguous(at::MemoryFormat::ChannelsLast)};
  for (const auto& x : inputs) {
    SyncableBatchNorm2d bn(x.size(1));
    bn->to(at::kCUDA);
    const auto y = bn->forward_relu(x.detach().requires_grad_(true));
    ASSERT_TRUE(y.grad_fn());
    EXPECT_EQ(y.grad_fn()->name().find("FusedBatchNorm"), std::string::npos) << y.grad_fn()->name();
  }
}

namespace {

// A forked output's backward against one output read twice, whose readers' gradients autograd adds
// (in the element type) before the layer's backward: the same bits, and the readers' memory one.
void expect_fork_matches_autograds_add(const Case& k, bool read_shortcut) {
  SCOPED_TRACE(name_of(k) + (read_shortcut ? "" : ", shortcut unread"));
  at::manual_seed(5);
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const auto shape = std::vector<std::int64_t>{k.n, k.c, k.h, k.w};
  const auto channels_last = [&](at::Tensor t) { return t.to(k.dtype).contiguous(at::MemoryFormat::ChannelsLast); };
  const auto x = channels_last(at::randn(shape, cuda) * 2 + 0.5);
  const auto residual = k.residual ? channels_last(at::randn(shape, cuda)) : at::Tensor();
  const auto g_main = channels_last(at::randn(shape, cuda)), g_shortcut = channels_last(at::randn(shape, cuda));
  SyncableBatchNorm2d once(k.c), forked(k.c);
  once->to(at::kCUDA);
  forked->to(at::kCUDA);
  const auto weight = at::rand({k.c}, cuda) + 0.5, bias = at::randn({k.c}, cuda);
  for (auto* w : {&once->weight, &forked->weight}) w->set_data(weight.clone());
  for (auto* b : {&once->bias, &forked->bias}) b->set_data(bias.clone());
  const auto inputs = [&] {
    return std::pair{x.detach().requires_grad_(true), k.residual ? residual.detach().requires_grad_(true) : at::Tensor()};
  };

  const auto [x_once, r_once] = inputs();
  const auto y = k.residual ? once->forward_add_relu(x_once, r_once) : once->forward_relu(x_once);
  if (read_shortcut)
    torch::autograd::backward({y, y}, {g_main, g_shortcut});
  else
    y.backward(g_main);
  const auto [x_fork, r_fork] = inputs();
  const auto out = forked->forward_relu_forked(x_fork, r_fork);
  ASSERT_TRUE(out.main.grad_fn() && out.shortcut.grad_fn());
  EXPECT_NE(out.main.grad_fn()->name().find("FusedBatchNorm"), std::string::npos) << out.main.grad_fn()->name();
  EXPECT_EQ(out.main.data_ptr(), out.shortcut.data_ptr()) << "the readers' tensors are one memory";
  if (read_shortcut)
    torch::autograd::backward({out.main, out.shortcut}, {g_main, g_shortcut});
  else
    out.main.backward(g_main);

  EXPECT_TRUE(at::equal(out.main, y)) << "output";
  EXPECT_TRUE(at::equal(x_fork.grad(), x_once.grad())) << "input gradient";
  if (k.residual) {
    EXPECT_TRUE(at::equal(r_fork.grad(), r_once.grad())) << "residual gradient";
  }
  EXPECT_TRUE(at::equal(forked->weight.grad(), once->weight.grad())) << "weight gradient";
  EXPECT_TRUE(at::equal(forked->bias.grad(), once->bias.grad())) << "bias gradient";
}

}  // namespace

TEST_F(GpuBatchNorm, AForkedOutputsBackwardAddsItsReadersGradientsAsAutogradWould) {
  const Case cases[] = {
      {8, 64, 16, 16, true, true, at::kBFloat16},    // a BasicBlock's end, read by the next block's conv and shortcut
      {4, 128, 7, 9, false, true, at::kHalf},        // the CIFAR stem's batch norm: ReLU, no residual
      {256, 64, 32, 32, true, true, at::kBFloat16},  // ResNet-18's first stage at batch 256
  };
  for (const auto& k : cases) {
    expect_fork_matches_autograds_add(k, true);
    expect_fork_matches_autograds_add(k, false);  // the last block's output: its shortcut reader is none
  }
}
