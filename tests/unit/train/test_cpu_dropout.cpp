// train::cpu_dropout (src/train/models/layers/cpu_dropout.hpp): at::dropout's contract, with a mask that all threads
// draw and that depends only on the seed.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <limits>

#include "train/models/layers/cpu_dropout.hpp"

using gputrain::train::cpu_dropout;

namespace {

double kept_share(const at::Tensor& t) { return (t != 0).to(at::kDouble).mean().item<double>(); }

}  // namespace

TEST(CpuDropout, KeepsOneMinusPOfTheElementsScaledAndEachPositionAlike) {
  at::manual_seed(1);
  const std::int64_t n = 1 << 20;
  const auto out = cpu_dropout(at::ones({n}), 0.3, true);
  const auto kept = out != 0;
  EXPECT_TRUE(at::allclose(out.masked_select(kept), at::full({1}, 1.0 / 0.7)));
  EXPECT_NEAR(kept_share(out), 0.7, 0.003);  // the binomial's spread is 0.00045
  // Every lane of the generators and every part of the tensor keeps its share, and neighbours
  // are kept independently: P(both) = 0.49.
  const auto by_lane = out.view({-1, 16});
  for (int lane = 0; lane < 16; ++lane) EXPECT_NEAR(kept_share(by_lane.select(1, lane)), 0.7, 0.012) << "lane " << lane;
  EXPECT_NEAR(kept_share(out.slice(0, 0, n / 8)), 0.7, 0.006);
  EXPECT_NEAR(kept_share(out.slice(0, n - n / 8)), 0.7, 0.006);
  const auto both = (kept.slice(0, 0, n - 1) & kept.slice(0, 1)).to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(both, 0.49, 0.004);
}

TEST(CpuDropout, TheSeedDecidesTheMaskWhateverTheThreads) {
  const auto input = at::ones({3, 100003});  // not a whole number of blocks
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  at::manual_seed(9);
  const auto one_thread = cpu_dropout(input, 0.5, true);
  at::set_num_threads(std::max(2, threads));
  at::manual_seed(9);
  const auto several = cpu_dropout(input, 0.5, true);
  const auto next = cpu_dropout(input, 0.5, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one_thread, several));
  EXPECT_FALSE(at::equal(several, next)) << "each call draws a new mask";
  at::manual_seed(10);
  EXPECT_FALSE(at::equal(cpu_dropout(input, 0.5, true), one_thread)) << "another seed, another mask";
}

TEST(CpuDropout, PassesTheGradientThroughTheKeptElementsScaled) {
  at::manual_seed(2);
  const auto x = at::randn({64, 130}).requires_grad_();
  const auto out = cpu_dropout(x, 0.25, true);
  out.sum().backward();
  const auto kept = out.detach() != 0;
  EXPECT_TRUE(at::allclose(x.grad(), kept.to(at::kFloat) / 0.75));
  EXPECT_TRUE(at::allclose(out.detach(), x.detach() * kept / 0.75));
}

TEST(CpuDropout, IsTheInputOutsideTrainingAndAtDropoutForOtherTypes) {
  const auto x = at::randn({8, 8});
  EXPECT_TRUE(cpu_dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(cpu_dropout(x, 0.0, true).is_same(x));
  at::manual_seed(3);
  const auto xd = x.to(at::kDouble);
  const auto ours = cpu_dropout(xd, 0.5, true);
  at::manual_seed(3);
  EXPECT_TRUE(at::equal(ours, at::dropout(xd, 0.5, true)));
  EXPECT_TRUE(at::equal(cpu_dropout(x, 1.0, true), at::zeros_like(x)));
}

// Whether autograd records it or not, the output is input * noise for the seed's noise: the same
// elements kept, an inf or nan dropped still nan (as at::dropout's multiply gives), and the
// gradient grad * noise (the hand-written MLP step multiplies by dropout_noise's noise).
TEST(CpuDropout, IsInputTimesTheSeedsNoiseWithOrWithoutAutograd) {
  const auto x = at::randn({5, 1000});
  x[0][0] = std::numeric_limits<float>::infinity();
  x[1][1] = std::numeric_limits<float>::quiet_NaN();
  at::manual_seed(12);
  const auto noise = gputrain::train::dropout_noise(x, 0.5);
  at::manual_seed(12);
  const auto plain = cpu_dropout(x, 0.5, true);
  at::manual_seed(12);
  const auto leaf = x.clone().requires_grad_();
  const auto recorded = cpu_dropout(leaf, 0.5, true);
  const auto grad = at::randn_like(x);
  recorded.backward(grad);
  EXPECT_TRUE(at::equal(plain.nan_to_num(0, 1, -1), (x * noise).nan_to_num(0, 1, -1)));
  EXPECT_TRUE(at::equal(recorded.detach().nan_to_num(0, 1, -1), plain.nan_to_num(0, 1, -1)));
  EXPECT_TRUE(at::equal(at::isnan(plain), at::isnan(x * noise)));
  EXPECT_TRUE(at::equal(leaf.grad(), grad * noise));
}
