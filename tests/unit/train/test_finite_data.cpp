// NaN and inf in the data, found before the first step (finite_data).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "gputrain/core/error.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"
#include "support/text_checks.hpp"
#include "train/data_checks/finite_data.hpp"

using gputrain::test_support::contains;
using namespace gputrain;
using namespace gputrain::train;

namespace {

// The UsageError refuse_nonfinite_samples throws, as "message\nfix"; empty when it accepts.
std::string refusal(const Config& config, const data::Sources& sources) {
  try {
    refuse_nonfinite_samples(config, sources);
  } catch (const UsageError& e) {
    return std::string(e.what()) + "\n" + e.remedy();
  }
  return "";
}

}  // namespace

TEST(FiniteData, NonFiniteSamplesAreCountedInInputsAndFloatTargets) {
  auto x = at::zeros({6, 2, 3});
  x[4][1][2] = std::numeric_limits<float>::infinity();
  auto y = at::zeros({6, 1});
  y[2][0] = std::numeric_limits<float>::quiet_NaN();
  const auto found = find_nonfinite({x, y});
  EXPECT_EQ(found.samples, 6);
  EXPECT_EQ(found.count, 2);
  EXPECT_EQ(found.first, 2);
  const auto clean = find_nonfinite({at::zeros({3, 2}), at::zeros({3}, at::kLong)});
  EXPECT_EQ(clean.count, 0);
  EXPECT_EQ(clean.first, -1);
}

TEST(FiniteData, NpyArraysWithNanAreRefusedWithTheNumpyLineThatDropsThoseSamples) {
  auto x = at::randn({50, 4});
  x[7][1] = std::numeric_limits<float>::quiet_NaN();
  x[30][0] = std::numeric_limits<float>::infinity();
  data::Sources sources;
  sources.train = data::make_array_dataset({x, at::zeros({50}, at::kLong)}, "npy data/x.npy (50 samples)", "x.npy");
  Config config;
  config.data.source = "npy";
  config.data.path = "data/x.npy";
  config.data.labels = {"data/y.npy"};
  const auto text = refusal(config, sources);
  EXPECT_TRUE(contains(
      text, "npy data/x.npy (50 samples) holds NaN or inf values in 2 of its 50 samples; the first is x.npy sample 7 (nan in its inputs)"))
      << text;
  EXPECT_TRUE(contains(text, "x = np.load('data/x.npy'); y = np.load('data/y.npy'); keep = np.isfinite(x.reshape(len(x), -1)).all(1)"))
      << text;
  EXPECT_TRUE(contains(text, "then use data/x-complete.npy and data/y-complete.npy")) << text;

  // Validation data is searched too; other sources get the fix in words.
  sources.train = data::make_array_dataset({at::randn({50, 4}), at::zeros({50}, at::kLong)}, "train", "train");
  auto y = at::zeros({10, 1});
  y[3][0] = -std::numeric_limits<float>::infinity();
  sources.val = data::make_array_dataset({at::randn({10, 4}), y}, "safetensors v.safetensors (10 samples)", "v.safetensors");
  config.data.source = "safetensors";
  const auto val = refusal(config, sources);
  EXPECT_TRUE(contains(val, "holds NaN or inf values in 1 of its 10 samples; the first is v.safetensors sample 3 (inf in its targets)"))
      << val;
  EXPECT_TRUE(contains(val, "fill them in or drop those samples")) << val;

  sources.val = nullptr;  // finite data, and class ids that are never NaN, pass
  EXPECT_EQ(refusal(config, sources), "");
}
