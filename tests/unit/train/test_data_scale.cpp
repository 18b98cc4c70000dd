// The scale hints and target standardisation behind data.standardize and data.standardize_targets.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <memory>

#include "gputrain/core/error.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"
#include "support/text_checks.hpp"
#include "train/data_checks/data_scale.hpp"

using gputrain::test_support::contains;
using namespace gputrain;
using namespace gputrain::train;

namespace {

std::shared_ptr<const data::Dataset> arrays(const at::Tensor& inputs, const at::Tensor& targets) {
  return data::make_array_dataset({inputs, targets}, "arrays", "arrays");
}

Config regression(bool standardize_targets) {
  Config c;
  c.data.task = "regression";
  c.data.standardize_targets = standardize_targets;
  return c;
}

}  // namespace

TEST(DataScale, FeaturesFarFromUnitScaleAreNamedWithTheSettingThatFixesThem) {
  at::manual_seed(0);
  auto x = at::randn({200, 6}, at::kFloat);
  x.select(1, 1).copy_(at::arange(200).remainder(2).mul(100).add(120));  // heights in cm: 120, 220, ...
  x.select(1, 4).fill_(-40);                                             // a large offset alone counts too
  const auto set = arrays(x, at::zeros({200}, at::kLong));
  const auto named = feature_scale_hint(*set, {"a", "height", "c", "d", "offset", "f"});
  EXPECT_TRUE(
      contains(named, "features far from unit scale: 'height' mean 170.0, std 50.0; 'offset' mean -40.0, std 0.0; data.standardize: true"))
      << named;
  EXPECT_FALSE(contains(named, "'a'")) << named;
  // Arrays have no column names: features are named by index.
  EXPECT_TRUE(contains(feature_scale_hint(*set, {}), "feature 1 mean")) << feature_scale_hint(*set, {});
  // More than three: three examples and the count.
  const auto wide = feature_scale_hint(*arrays(at::full({10, 5}, 100.0), at::zeros({10}, at::kLong)), {});
  EXPECT_TRUE(contains(wide, "feature 2 mean 100.0, std 0.0 (5 features in all)")) << wide;
  EXPECT_FALSE(contains(wide, "feature 3")) << wide;
}

TEST(DataScale, NoFeatureHintForUnitScaleVectorsOrForImages) {
  at::manual_seed(0);
  EXPECT_EQ(feature_scale_hint(*arrays(at::randn({100, 4}), at::zeros({100}, at::kLong)), {}), "");
  // uint8 images are scaled to [0, 1] before the model sees them; their 0-255 is not a sign of trouble.
  EXPECT_EQ(feature_scale_hint(*arrays(at::full({4, 3, 8, 8}, 200, at::kByte), at::zeros({4}, at::kLong)), {}), "");
}

TEST(DataScale, StandardizeTargetsSetsTheTransformFromTheTrainingTargets) {
  const auto y = at::tensor({100.0, 300.0, 500.0, 700.0}, at::kFloat).view({4, 1});
  const auto set = arrays(at::randn({4, 2}), y);
  data::BatchTransform transform;
  const auto note = scale_targets(regression(true), *set, transform);
  ASSERT_EQ(transform.target_mean.size(), 1u);
  EXPECT_DOUBLE_EQ(transform.target_mean[0], 400.0);
  EXPECT_NEAR(transform.target_std[0], std::sqrt(50000.0), 1e-9);  // population std
  EXPECT_TRUE(contains(note, "data.standardize_targets: per-target mean [400] and std [223.607] of the 4 training samples")) << note;
  const auto standardised = transform.targets(y);
  EXPECT_TRUE(at::allclose(standardised, (y - 400) / std::sqrt(50000.0)));
  EXPECT_TRUE(at::allclose(transform.predictions(standardised), y));
}

TEST(DataScale, LargeTargetsGetAHintAndSmallOnesNone) {
  at::manual_seed(0);
  data::BatchTransform transform;
  const auto prices = arrays(at::randn({50, 2}), at::full({50, 1}, 250000.0));
  const auto hint = scale_targets(regression(false), *prices, transform);
  EXPECT_TRUE(contains(hint, "regression targets far from unit scale")) << hint;
  EXPECT_TRUE(contains(hint, "the MSE loss starts near 62500000000")) << hint;
  EXPECT_TRUE(contains(hint, "data.standardize_targets: true")) << hint;
  EXPECT_TRUE(transform.target_mean.empty());
  EXPECT_EQ(scale_targets(regression(false), *arrays(at::randn({50, 2}), at::randn({50, 1})), transform), "");
  Config classification;
  EXPECT_EQ(scale_targets(classification, *arrays(at::randn({50, 2}), at::full({50}, 400, at::kLong)), transform), "");
}
