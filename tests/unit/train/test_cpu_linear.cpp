// train::linear (src/train/models/layers/cpu_linear.hpp): at::linear's results and gradients, with oneDNN's
// products where asked, and at::linear itself wherever oneDNN does not apply.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/native/verbose_wrapper.h>
#include <gtest/gtest.h>

#include <string>

#include "train/models/layers/cpu_linear.hpp"

using namespace gputrain::train;

namespace {

struct Result {
  at::Tensor output, input_grad, weight_grad, bias_grad;
};

// Output and gradients of sum(linear(x) * w) for fresh leaves holding the given values.
template <typename Linear>
Result run(Linear&& linear_fn, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const at::Tensor& w) {
  const auto input = x.clone().requires_grad_(), weight_leaf = weight.clone().requires_grad_();
  const auto bias_leaf = bias.defined() ? bias.clone().requires_grad_() : at::Tensor();
  const auto output = linear_fn(input, weight_leaf, bias_leaf);
  (output * w).sum().backward();
  return {output.detach(), input.grad(), weight_leaf.grad(), bias_leaf.defined() ? bias_leaf.grad() : at::Tensor()};
}

// What oneDNN says it ran while `body` runs (its verbose lines: "onednn_verbose,...,exec,cpu,matmul,...").
template <typename Body>
std::string onednn_lines(Body&& body) {
  testing::internal::CaptureStdout();
  torch::verbose::_mkldnn_set_verbose(1);
  body();
  torch::verbose::_mkldnn_set_verbose(0);
  std::fflush(stdout);
  return testing::internal::GetCapturedStdout();
}

void expect_within_rounding(const at::Tensor& ours, const at::Tensor& reference, const char* what) {
  const double scale = reference.abs().max().item<double>();
  EXPECT_LE((ours - reference).abs().max().item<double>(), 1e-5 * scale + 1e-7) << what;
}

}  // namespace

// The oneDNN path calls a LibTorch symbol declared weak (cpu_matmul.cpp): a LibTorch upgrade that
// drops or renames it must fail here, loudly, not silently fall back to MKL everywhere.
TEST(CpuLinear, TheWeakOneDnnSymbolIsThereInThisLibTorch) {
  ASSERT_TRUE(onednn_matmul_available()) << "this LibTorch does not export at::native::mkldnn_matmul (or was built without oneDNN): "
                                            "cpu_linear's oneDNN path is gone; declare the symbol it exports now in cpu_matmul.cpp, "
                                            "or remove cpu_matmul and measure bench/train_vs_pytorch.py without it";
}

TEST(CpuLinear, OneDnnsProductsGiveAtLinearsOutputsAndGradientsWithinRounding) {
  ASSERT_TRUE(onednn_matmul_available()) << "see TheWeakOneDnnSymbolIsThereInThisLibTorch";
  if (!onednn_matmul_runs_here()) GTEST_SKIP() << "this CPU has no AVX-512 (BW, VL, DQ), without which LibTorch refuses oneDNN's matmul";
  at::manual_seed(5);
  const auto x = at::randn({4, 70, 96}), weight = at::randn({80, 96}) * 0.1, bias = at::randn({80}), w = at::randn({4, 70, 80});
  for (const bool with_bias : {true, false}) {
    const auto b = with_bias ? bias : at::Tensor();
    const auto reference = run([](auto&&... a) { return at::linear(a...); }, x, weight, b, w);
    Result ours;
    // Its products can equal MKL's bit for bit (they do on some Intel CPUs): oneDNN's own lines
    // say that it ran them.
    const auto said = onednn_lines([&] {
      ours = run([](const at::Tensor& i, const at::Tensor& wt, const at::Tensor& bs) { return linear(i, wt, bs, CpuMatmul::onednn); }, x,
                 weight, b, w);
    });
    ASSERT_EQ(ours.output.sizes(), reference.output.sizes());
    expect_within_rounding(ours.output, reference.output, "output");
    expect_within_rounding(ours.input_grad, reference.input_grad, "input's gradient");
    expect_within_rounding(ours.weight_grad, reference.weight_grad, "weight's gradient");
    if (with_bias) expect_within_rounding(ours.bias_grad, reference.bias_grad, "bias's gradient");
    EXPECT_NE(said.find("exec,cpu,matmul"), std::string::npos) << "oneDNN ran no matmul; it said: " << said.substr(0, 2000);
  }
  at::NoGradGuard no_grad;  // without autograd: the same products, nothing recorded
  const auto plain = linear(x, weight, bias, CpuMatmul::onednn);
  expect_within_rounding(plain, at::linear(x, weight, bias), "output without autograd");
  EXPECT_FALSE(plain.requires_grad());
}

// MKL asked for, another dtype, or autocast on: at::linear runs, bit for bit.
TEST(CpuLinear, IsAtLinearWhereOneDnnDoesNotApply) {
  at::manual_seed(6);
  const auto x = at::randn({70, 96}), weight = at::randn({80, 96}), bias = at::randn({80});
  EXPECT_TRUE(at::equal(linear(x, weight, bias, CpuMatmul::mkl), at::linear(x, weight, bias)));
  const auto xd = x.to(at::kDouble), wd = weight.to(at::kDouble), bd = bias.to(at::kDouble);
  EXPECT_TRUE(at::equal(linear(xd, wd, bd, CpuMatmul::onednn), at::linear(xd, wd, bd)));
  {
    at::autocast::set_autocast_enabled(at::kCPU, true);
    const auto ours = linear(x, weight, bias, CpuMatmul::onednn), theirs = at::linear(x, weight, bias);
    at::autocast::set_autocast_enabled(at::kCPU, false);
    EXPECT_EQ(ours.scalar_type(), at::kBFloat16);
    EXPECT_TRUE(at::equal(ours, theirs));
  }
}
