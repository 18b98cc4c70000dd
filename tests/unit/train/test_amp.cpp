#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>

#include "gputrain/train/amp.hpp"

using namespace gputrain::train;

namespace {

at::Tensor parameter_with_grad(float grad_value) {
  auto p = at::zeros({4}).requires_grad_(true);
  p.mutable_grad() = at::full({4}, grad_value);
  return p;
}

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
  bool stepped = false;
  EXPECT_TRUE(scaler.step({p}, [&] { stepped = true; }));
  EXPECT_TRUE(stepped);
  EXPECT_TRUE(at::allclose(p.grad(), at::ones({4})));
  scaler.update();
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 65536.0);  // one clean step of 2000: no growth yet
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(GradScaler, SkipsTheStepAndBacksOffOnInfOrNan) {
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    auto scaler = cpu_scaler();
    auto p = parameter_with_grad(bad);
    bool stepped = false;
    EXPECT_FALSE(scaler.step({p}, [&] { stepped = true; }));
    EXPECT_FALSE(stepped);
    scaler.update();
    EXPECT_DOUBLE_EQ(scaler.scale_value(), 32768.0);
    EXPECT_EQ(scaler.skipped_steps(), 1);
  }
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  auto scaler = cpu_scaler(/*growth_interval=*/3);
  for (int i = 0; i < 3; ++i) {
    auto p = parameter_with_grad(1.0f);
    scaler.step({p}, [] {});
    scaler.update();
  }
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 131072.0);
}

TEST(GradScaler, AnInfResetsTheGrowthCount) {
  auto scaler = cpu_scaler(/*growth_interval=*/2);
  auto clean = [&] {
    auto p = parameter_with_grad(1.0f);
    scaler.step({p}, [] {});
    scaler.update();
  };
  clean();
  auto p = parameter_with_grad(std::numeric_limits<float>::infinity());
  scaler.step({p}, [] {});
  scaler.update();  // 65536 -> 32768, tracker reset
  clean();
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 32768.0);
  clean();
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 65536.0);
}

TEST(GradScaler, StateRoundTrips) {
  auto a = cpu_scaler();
  auto p = parameter_with_grad(std::numeric_limits<float>::infinity());
  a.step({p}, [] {});
  a.update();
  auto b = cpu_scaler();
  b.load_state(a.state());
  EXPECT_DOUBLE_EQ(b.scale_value(), 32768.0);
  EXPECT_EQ(b.skipped_steps(), 1);
}

TEST(GradScaler, DisabledPassesThrough) {
  GradScaler scaler(false, c10::Device(at::kCPU));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 1.0);
  auto p = parameter_with_grad(std::numeric_limits<float>::infinity());
  bool stepped = false;
  EXPECT_TRUE(scaler.step({p}, [&] { stepped = true; }));
  EXPECT_TRUE(stepped);
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
