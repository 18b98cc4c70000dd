// Clipping on the device gives LibTorch's clip_grad_norm_'s gradients, and its norm, without the
// host sync LibTorch's makes to return the norm as a double.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/utils/clip_grad.h>

#include "train/step/grad_clip.hpp"

using namespace gputrain::train;

namespace {

std::vector<at::Tensor> params_with_grads(double grad_scale) {
  at::manual_seed(3);
  std::vector<at::Tensor> params;
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{8, 4}, {8}, {3, 3, 2, 2}}) {
    auto p = at::randn(shape).requires_grad_(true);
    p.mutable_grad() = at::randn(shape) * grad_scale;
    params.push_back(p);
  }
  params.push_back(at::randn({5}).requires_grad_(true));  // no gradient: left alone
  return params;
}

}  // namespace

TEST(GradClip, MatchesLibTorchsClipGradNorm) {
  for (double scale : {0.01, 1.0, 100.0}) {  // below, near and far above the limit
    auto ours = params_with_grads(scale), theirs = params_with_grads(scale);
    const auto norm = clip_grad_norm(ours, 1.0);
    const double their_norm = torch::nn::utils::clip_grad_norm_(theirs, 1.0);
    EXPECT_NEAR(norm.item<double>(), their_norm, 1e-5 * their_norm) << "scale " << scale;
    for (std::size_t i = 0; i + 1 < ours.size(); ++i)
      EXPECT_TRUE(at::allclose(ours[i].grad(), theirs[i].grad(), 1e-6, 1e-7)) << "scale " << scale << ", parameter " << i;
    EXPECT_FALSE(ours.back().grad().defined());
  }
}

TEST(GradClip, NoGradientsNoNorm) {
  auto p = at::zeros({3}).requires_grad_(true);
  EXPECT_FALSE(clip_grad_norm({p}, 1.0).defined());
}

// logging.grad_norm's figure: the norm LibTorch's clip_grad_norm_ returns, the gradients untouched.
TEST(GradClip, TheGlobalNormIsLibTorchsAndChangesNothing) {
  auto ours = params_with_grads(1.0), theirs = params_with_grads(1.0);
  const auto before = ours[0].grad().clone();
  const auto norm = global_grad_norm(ours);
  const double their_norm = torch::nn::utils::clip_grad_norm_(theirs, 1e30);
  EXPECT_NEAR(norm.item<double>(), their_norm, 1e-5 * their_norm);
  EXPECT_TRUE(at::equal(ours[0].grad(), before));
  auto none = at::zeros({3}).requires_grad_(true);
  EXPECT_FALSE(global_grad_norm({none}).defined());
}
