#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gputrain/core/error.hpp"
#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/data/tensor_dataset.hpp"

using namespace gputrain;
using namespace gputrain::data;

TEST(Synthetic, IsReproducibleAndSplitsShareTheTeacher) {
  SyntheticSpec spec{"classification", {3, 8, 8}, 5, 11};
  const auto a = make_synthetic(spec, 64, 0), b = make_synthetic(spec, 64, 0), v = make_synthetic(spec, 32, 1);
  EXPECT_TRUE(at::equal(a.inputs, b.inputs));
  EXPECT_TRUE(at::equal(a.targets, b.targets));
  EXPECT_FALSE(at::equal(a.inputs.slice(0, 0, 32), v.inputs));
  EXPECT_EQ(a.inputs.sizes(), (std::vector<std::int64_t>{64, 3, 8, 8}));
  EXPECT_EQ(a.targets.scalar_type(), at::kLong);
  EXPECT_GE(a.targets.min().item<std::int64_t>(), 0);
  EXPECT_LT(a.targets.max().item<std::int64_t>(), 5);
}

TEST(Synthetic, RegressionTargetsHaveOneColumnPerOutput) {
  const auto set = make_synthetic({"regression", {6}, 3, 1}, 10, 0);
  EXPECT_EQ(set.targets.sizes(), (std::vector<std::int64_t>{10, 3}));
  EXPECT_EQ(set.targets.scalar_type(), at::kFloat);
}

TEST(EpochSampler, ShufflesPerEpochReproducibly) {
  EpochSampler sampler(100, true, 3);
  EXPECT_TRUE(at::equal(sampler.order(0), sampler.order(0)));
  EXPECT_FALSE(at::equal(sampler.order(0), sampler.order(1)));
  EXPECT_TRUE(at::equal(std::get<0>(sampler.order(2).sort()), at::arange(100, at::kLong)));
  EXPECT_TRUE(at::equal(EpochSampler(10, false, 3).order(5), at::arange(10, at::kLong)));
}

TEST(Safetensors, RoundTripsEveryDtype) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-roundtrip.safetensors").string();
  std::vector<std::pair<std::string, at::Tensor>> tensors{
      {"f32", at::randn({2, 3})}, {"f16", at::randn({5}).to(at::kHalf)}, {"bf16", at::randn({1, 1, 2}).to(at::kBFloat16)},
      {"i64", at::arange(7, at::kLong)}, {"u8", at::arange(3, at::kByte)}, {"b", at::ones({2}, at::kBool)},
      {"scalar", at::full({}, 3.5)}, {"strided", at::randn({4, 4}).t()}};
  write_safetensors(path, tensors, {{"format", "pt"}});
  const auto back = read_safetensors(path);
  ASSERT_EQ(back.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(back[i].first, tensors[i].first);
    EXPECT_TRUE(at::equal(back[i].second, tensors[i].second)) << tensors[i].first;
  }
}

TEST(Safetensors, MalformedFilesAreUsageErrors) {
  EXPECT_THROW(read_safetensors("/no/such/file.safetensors"), UsageError);
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-bad.safetensors").string();
  std::ofstream(path) << "not a safetensors file at all";
  EXPECT_THROW(read_safetensors(path), UsageError);
}
