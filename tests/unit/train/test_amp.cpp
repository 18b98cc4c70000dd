#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/archive.h>

#include <cmath>

#include "gputrain/train/amp.hpp"
#include "gputrain/train/optimizer.hpp"

using namespace gputrain::train;

namespace {

at::Tensor parameter_with_grad(float grad_value) {
  auto p = at::zeros({4}).requires_grad_(true);
  p.mutable_grad() = at::full({4}, grad_value);
  return p;
}

// Plain SGD at lr 1 over `p`: a step moves p by minus its (unscaled) gradient.
std::unique_ptr<torch::optim::Optimizer> sgd(const at::Tensor& p) {
  OptimizerConfig c;
  c.name = "sgd";
  c.lr = 1.0;
  c.momentum = 0.0;
  return make_optimizer(c, {p});
}

bool moved(const at::Tensor& p) { return !at::equal(p.detach(), at::zeros({4})); }

GradScaler cpu_scaler(std::int64_t growth_interval = 2000) {
  GradScalerOptions options;
  options.growth_interval = growth_interval;
  return GradScaler(true, c10::Device(at::kCPU), options);
}

}  // namespace

TEST(GradScaler, StartsAtPyTorchsDefaultScaleAndScalesTheLoss) {
  auto scaler = cpu_scaler();
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 65536.0);
  EXPECT_FLOAT_EQ(scaler.scale(at::full({}, 0.5f)).item<float>(), 32768.0f);
}

TEST(GradScaler, UnscalesGradientsAndSteps) {
  auto scaler = cpu_scaler();
  auto p = parameter_with_grad(65536.0f);
  scaler.step({p}, *sgd(p));
  EXPECT_TRUE(at::allclose(p.grad(), at::ones({4})));
  EXPECT_TRUE(at::allclose(p.detach(), -at::ones({4})));
  scaler.update();
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 65536.0);  // one clean step of 2000: no growth yet
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(GradScaler, SkipsTheStepAndBacksOffOnInfOrNan) {
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    auto scaler = cpu_scaler();
    auto p = parameter_with_grad(bad);
    scaler.step({p}, *sgd(p));
    EXPECT_FALSE(moved(p)) << "the fused kernel stepped despite the found-inf flag";
    scaler.update();
    EXPECT_DOUBLE_EQ(scaler.scale_value(), 32768.0);
    EXPECT_EQ(scaler.skipped_steps(), 1);
  }
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  auto scaler = cpu_scaler(/*growth_interval=*/3);
  for (int i = 0; i < 3; ++i) {
    auto p = parameter_with_grad(1.0f);
    scaler.step({p}, *sgd(p));
    scaler.update();
  }
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 131072.0);
}

TEST(GradScaler, AnInfResetsTheGrowthCount) {
  auto scaler = cpu_scaler(/*growth_interval=*/2);
  auto clean = [&] {
    auto p = parameter_with_grad(1.0f);
    scaler.step({p}, *sgd(p));
    scaler.update();
  };
  clean();
  auto p = parameter_with_grad(std::numeric_limits<float>::infinity());
  scaler.step({p}, *sgd(p));
  scaler.update();  // 65536 -> 32768, tracker reset
  clean();
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 32768.0);
  clean();
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 65536.0);
}

TEST(GradScaler, StateRoundTrips) {
  auto a = cpu_scaler();
  auto p = parameter_with_grad(std::numeric_limits<float>::infinity());
  a.step({p}, *sgd(p));
  a.update();
  auto b = cpu_scaler();
  b.load_state(a.state());
  EXPECT_DOUBLE_EQ(b.scale_value(), 32768.0);
  EXPECT_EQ(b.skipped_steps(), 1);
}

TEST(GradScaler, DisabledPassesThrough) {
  GradScaler scaler(false, c10::Device(at::kCPU));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 1.0);
  auto p = parameter_with_grad(1.0f);
  scaler.step({p}, *sgd(p));
  EXPECT_TRUE(moved(p));
}

TEST(GradScaler, SkipsOnTheHostForAnOptimizerThatCannotSkipOnTheDevice) {
  for (float grad : {1.0f, std::numeric_limits<float>::infinity()}) {
    auto scaler = cpu_scaler();
    auto p = parameter_with_grad(grad);
    torch::optim::SGD libtorch_sgd({p}, torch::optim::SGDOptions(1.0));
    scaler.step({p}, libtorch_sgd);
    EXPECT_EQ(moved(p), std::isfinite(grad));
    scaler.update();
    EXPECT_EQ(scaler.skipped_steps(), std::isfinite(grad) ? 0 : 1);
  }
}

TEST(GradScaler, AdamsSkippedStepsDoNotCount) {
  // PyTorch's capturable Adam counts a step the flag skips and takes it back: the bias correction
  // of the next step must be that of step 1, as if the skipped one never happened.
  OptimizerConfig c;
  c.lr = 0.1;
  auto skipped_first = parameter_with_grad(std::numeric_limits<float>::infinity());
  auto clean_only = parameter_with_grad(65536.0f);
  auto a = make_optimizer(c, {skipped_first}), b = make_optimizer(c, {clean_only});
  auto scaler_a = cpu_scaler(), scaler_b = cpu_scaler();
  scaler_a.step({skipped_first}, *a);
  scaler_a.update();  // scale 32768 now
  EXPECT_FALSE(moved(skipped_first));
  skipped_first.mutable_grad() = at::full({4}, 32768.0f);
  scaler_a.step({skipped_first}, *a);
  scaler_b.step({clean_only}, *b);
  EXPECT_TRUE(at::equal(skipped_first.detach(), clean_only.detach()));
  torch::serialize::OutputArchive archive;
  a->save(archive);  // flushes the device counts into LibTorch's state
  const auto& state = static_cast<torch::optim::AdamWParamState&>(*a->state().at(skipped_first.unsafeGetTensorImpl()));
  EXPECT_EQ(state.step(), 1);
}

TEST(AutocastScope, CastsMatmulToBf16OnCpuAndRestoresState) {
  const auto a = at::randn({4, 4}), b = at::randn({4, 4});
  {
    AutocastScope scope(at::kCPU, Precision::bf16_mixed);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
  {
    AutocastScope scope(at::kCPU, Precision::fp32);
    EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
  }
}
