// How the batch-norm kernels combine their blocks' partial statistics (batch_norm_moments.hpp),
// checked on the host with the same code the kernel runs: partials summed in 32 slices and the
// slices summed, as statistics_final does, against a two-pass reference in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "train/models/layers/batch_norm_moments.hpp"

using namespace gputrain::train::batch_norm_kernels;

namespace {

struct Partial {
  float count, mean, squares;
};

// The data cut into `blocks` runs of rows (the last one shorter), each run's figures in float as
// the statistics pass leaves them.
std::vector<Partial> partials_of(const std::vector<double>& rows, int blocks) {
  std::vector<Partial> partials;
  const std::size_t per_block = (rows.size() + static_cast<std::size_t>(blocks) - 1) / static_cast<std::size_t>(blocks);
  for (std::size_t first = 0; first < rows.size(); first += per_block) {
    const std::size_t last = std::min(rows.size(), first + per_block);
    double sum = 0;
    for (std::size_t i = first; i < last; ++i) sum += rows[i];
    const double n = static_cast<double>(last - first), mean = sum / n;
    double squares = 0;
    for (std::size_t i = first; i < last; ++i) squares += (rows[i] - mean) * (rows[i] - mean);
    partials.push_back({static_cast<float>(n), static_cast<float>(mean), static_cast<float>(squares)});
  }
  return partials;
}

// statistics_final's order: slice s sums partials s, s + 32, ...; then the slices are summed.
Moments combined(const std::vector<Partial>& partials, float shift) {
  constexpr std::size_t kSlices = 32;
  ShiftedSums total;
  for (std::size_t slice = 0; slice < kSlices; ++slice) {
    ShiftedSums sums;
    for (std::size_t b = slice; b < partials.size(); b += kSlices)
      add_partial(sums, partials[b].count, partials[b].mean, partials[b].squares, shift);
    add_sums(total, sums);
  }
  return moments_of(total, shift);
}

struct Reference {
  double mean, squares;
};

Reference reference_of(const std::vector<double>& rows) {
  double sum = 0;
  for (const double v : rows) sum += v;
  const double mean = sum / static_cast<double>(rows.size());
  double squares = 0;
  for (const double v : rows) squares += (v - mean) * (v - mean);
  return {mean, squares};
}

std::vector<double> normal_rows(std::size_t n, double mean, double spread, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> normal(mean, spread);
  std::vector<double> rows(n);
  for (auto& v : rows) v = normal(random);
  return rows;
}

double relative(double mine, double expected) { return std::abs(mine - expected) / std::abs(expected); }

}  // namespace

TEST(BatchNormMoments, PartialsCombineToTheWholesMeanAndVariance) {
  // ResNet-18's first stage at batch 256 has 528 partials a channel on an H100; a ragged last block.
  for (const int blocks : {1, 2, 31, 33, 528}) {
    const auto rows = normal_rows(262000, 0.3, 2.0, 7);
    const auto partials = partials_of(rows, blocks);
    const auto moments = combined(partials, partials[0].mean);
    const auto expected = reference_of(rows);
    EXPECT_NEAR(moments.mean, expected.mean, 1e-5) << blocks << " blocks";
    EXPECT_LT(relative(moments.squares, expected.squares), 1e-5) << blocks << " blocks";
  }
}

// A mean 2,000 times the spread: plain sums of n * mean^2 would cancel away the variance; sums
// about block 0's mean keep it.
TEST(BatchNormMoments, AFarOffMeanKeepsTheVarianceBecauseTheSumsAreShifted) {
  const auto rows = normal_rows(100000, 1000.0, 0.5, 3);
  const auto partials = partials_of(rows, 400);
  const auto expected = reference_of(rows);
  const auto shifted = combined(partials, partials[0].mean);
  EXPECT_LT(relative(shifted.mean, expected.mean), 1e-7);
  EXPECT_LT(relative(shifted.squares, expected.squares), 1e-4);
  const auto unshifted = combined(partials, 0.f);
  EXPECT_GT(relative(unshifted.squares, expected.squares), 1e-2) << "the shift no longer matters: is the test's data too tame?";
}

TEST(BatchNormMoments, AConstantChannelHasNoVarianceAndEmptyPartialsChangeNothing) {
  std::vector<Partial> partials = {{64.f, 2.5f, 0.f}, {0.f, 0.f, 0.f}, {64.f, 2.5f, 0.f}, {7.f, 2.5f, 0.f}};
  const auto moments = combined(partials, partials[0].mean);
  EXPECT_EQ(moments.mean, 2.5f);
  EXPECT_EQ(moments.squares, 0.f);

  const auto rows = normal_rows(5000, -4.0, 1.0, 5);
  auto with_empty = partials_of(rows, 10);
  const auto without = combined(with_empty, with_empty[0].mean);
  with_empty.insert(with_empty.begin() + 3, Partial{0.f, 0.f, 0.f});
  with_empty.push_back({0.f, 123.f, 0.f});  // an empty block's mean is whatever it kept: weighed by 0
  const auto with = combined(with_empty, with_empty[0].mean);
  EXPECT_NEAR(with.mean, without.mean, 1e-6);
  EXPECT_NEAR(with.squares, without.squares, 1e-6 * without.squares);
}
