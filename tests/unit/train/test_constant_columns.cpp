// The notes on features and regression targets that hold one value in every training sample
// (constant_column_notes).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <memory>

#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"
#include "train/data_checks/constant_columns.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

// 50 rows of three features: a measurement, a column of 5s and a column of 0.25s; the targets
// (one column) are `target`.
std::shared_ptr<const data::Dataset> table(const at::Tensor& target) {
  at::manual_seed(0);
  auto x = at::randn({50, 3});
  x.select(1, 1).fill_(5);
  x.select(1, 2).fill_(0.25);
  return data::make_array_dataset({x, target}, "arrays", "arrays");
}

}  // namespace

TEST(ConstantColumns, ConstantFeaturesAreNamedWithTheSettingThatLeavesThemOut) {
  Config config;
  config.data.exclude = {"date"};
  const auto notes = constant_column_notes(config, *table(at::zeros({50}, at::kLong)), {"temp", "b", "c"});
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_EQ(notes[0],
            "features: 'b' is 5, 'c' is 0.25 in every one of the 50 training samples; they tell the model nothing: leave them out with "
            "data.exclude: [date, b, c]");
  // An array's features by index; a category's one-hot column is no feature of its own to drop.
  EXPECT_NE(constant_column_notes(config, *table(at::zeros({50}, at::kLong)), {})[0].find("features: feature 1 is 5, feature 2 is 0.25"),
            std::string::npos);
  EXPECT_NE(constant_column_notes(config, *table(at::zeros({50}, at::kLong)), {"temp", "b", "city=Paris"})[0].find(
                "feature 'b' is 5 in every one of the 50 training samples, which tells the model nothing: leave it out with "
                "data.exclude: [date, b]"),
            std::string::npos);
}

TEST(ConstantColumns, AConstantRegressionTargetIsAWarningAndAVaryingOneIsNot) {
  Config config;
  config.data.task = "regression";
  config.data.labels = {"price"};
  const auto notes = constant_column_notes(config, *table(at::full({50, 1}, 3.0)), {"temp", "b", "c"});
  ASSERT_EQ(notes.size(), 2U);
  EXPECT_EQ(notes[1],
            "warning: the regression target 'price' is 3 in every one of the 50 training samples: the model can learn nothing but that "
            "number; check data.labels and the data's export");
  EXPECT_EQ(constant_column_notes(config, *table(at::randn({50, 1})), {"temp", "b", "c"}).size(), 1U);
}

TEST(ConstantColumns, FewSamplesOrVaryingFeaturesSayNothing) {
  const Config config;
  at::manual_seed(0);
  EXPECT_TRUE(
      constant_column_notes(config, *data::make_array_dataset({at::randn({50, 4}), at::zeros({50}, at::kLong)}, "a", "a"), {}).empty());
  EXPECT_TRUE(
      constant_column_notes(config, *data::make_array_dataset({at::ones({9, 4}), at::zeros({9}, at::kLong)}, "a", "a"), {}).empty());
}
