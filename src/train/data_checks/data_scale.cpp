#include "data_scale.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/sample_stats.hpp"
#include "gputrain/device/system_info.hpp"
#include "train/report/human_lines.hpp"

namespace gputrain::train {
namespace {

// Files (an image folder) are measured on at most this many samples, a seeded random choice: a
// mean over 10,000 images strays from the whole set's by about 1 % of the spread between images
// (1 / sqrt(10,000)), and the decoding stays seconds rather than an extra epoch of ImageNet.
constexpr std::int64_t kStandardizeSamples = 10000;

// Above this root mean square, values are far enough from unit scale to slow training down: a
// default-initialised layer's outputs grow with its inputs, and a regression model's last layer
// needs many optimizer steps of about lr each to reach targets in the 100s or 100,000s.
constexpr double kLargeRms = 10;

// A hint's figures come from this many samples at most, evenly spaced: the scale, not the digits.
constexpr std::int64_t kHintSamples = 65536;

// The measured spread: ChannelStats gives a constant column std 1 so that it is only centred.
double spread(const data::ChannelStats& stats, std::size_t i) {
  const auto& constant = stats.constant_channels;
  return std::binary_search(constant.begin(), constant.end(), static_cast<std::int64_t>(i))
             ? 0.0
             : stats.std[i];  // a scan: minutes at 300,000 columns
}

double root_mean_square(const data::ChannelStats& stats, std::size_t i) { return std::hypot(stats.mean[i], spread(stats, i)); }

}  // namespace

std::string standardize_inputs(Config& config, const std::shared_ptr<const data::Dataset>& train) {
  const auto& shape = train->layout().input_shape;
  if (shape.size() != 1 && shape.size() != 3)
    throw UsageError(
        "data.standardize works per feature of vectors or per channel of images, but samples have shape " +
            c10::str(c10::IntArrayRef(shape)),
        shape.size() == 2  // [sequence, features]: data.mean would apply per position, not per feature
            ? "set data.standardize: false and standardize each feature before saving the data: x = (x - x.mean(axis=(0, 1))) / "
              "x.std(axis=(0, 1)) (numpy, x of shape [samples, sequence, features])"
            : "set data.standardize: false, or data.mean and data.std per index of the samples' first dimension");
  data::ChannelStats stats;
  std::string of;
  if (const auto whole = train->tensors()) {
    stats = data::measure_channel_stats(whole->inputs);
    of = "the " + std::to_string(whole->size()) + " training samples";
  } else {
    const auto threads = std::max(1, static_cast<int>(device::collect_system_info().usable_cores));
    const auto measured = data::measure_sample_stats(train, kStandardizeSamples, threads, static_cast<std::uint64_t>(config.train.seed));
    stats = measured.stats;
    of = std::to_string(measured.measured) +
         (measured.measured + measured.skipped < train->size()
              ? " training samples chosen at random (seeded by train.seed) of " + std::to_string(train->size())
              : " training samples");
  }
  config.data.mean = stats.mean;
  config.data.std = stats.std;
  const std::string per = shape.size() == 1 ? "feature" : "channel";
  std::string note =
      "data.standardize: per-" + per + " mean " + first_values(stats.mean) + " and std " + first_values(stats.std) + " of " + of;
  if (!stats.constant_channels.empty())
    note += "; " + std::to_string(stats.constant_channels.size()) + " " + per + (stats.constant_channels.size() == 1 ? " is" : "s are") +
            " constant (e.g. " + per + " " + std::to_string(stats.constant_channels[0]) + "): only centred";
  return note;
}

std::string feature_scale_hint(const data::Dataset& train, const std::vector<std::string>& names) {
  const auto whole = train.tensors();
  if (!whole || whole->size() == 0 || whole->inputs.dim() != 2 || !at::isFloatingType(whole->inputs.scalar_type())) return "";
  const auto n = whole->size();
  const auto stride = (n + kHintSamples - 1) / kHintSamples;  // so at most kHintSamples are read
  const auto stats = data::measure_channel_stats(whole->inputs.slice(0, 0, n, stride));
  std::vector<std::string> large;
  std::size_t count = 0;
  for (std::size_t i = 0; i < stats.mean.size(); ++i) {
    if (root_mean_square(stats, i) <= kLargeRms) continue;
    if (++count > 3) continue;  // three examples say enough; the count says the rest
    const auto name = i < names.size() ? "'" + names[i] + "'" : "feature " + std::to_string(i);
    large.push_back(name + " mean " + core::format_fixed(stats.mean[i], 1) + ", std " + core::format_fixed(spread(stats, i), 1));
  }
  if (count == 0) return "";
  return "features far from unit scale: " + core::join(large, "; ") +
         (count > 3 ? " (" + std::to_string(count) + " features in all)" : "") +
         "; data.standardize: true trains on (x - mean) / std per feature, measured on the training set";
}

std::string scale_targets(const Config& config, const data::Dataset& train, data::BatchTransform& transform) {
  if (config.data.task != "regression") return "";
  const auto whole = train.tensors();
  if (!whole || whole->size() == 0) {
    if (config.data.standardize_targets)
      throw UsageError(
          "data.standardize_targets needs the training targets in memory, and " + train.description() + " reads them per batch",
          "remove data.standardize_targets");
    return "";
  }
  const auto stats = data::measure_channel_stats(whole->targets);  // regression targets are [N, targets]
  const std::string figures = "mean " + first_values(stats.mean) + " and std " + first_values(stats.std) + " of the " +
                              std::to_string(whole->size()) + " training samples";
  if (config.data.standardize_targets) {
    transform.target_mean = stats.mean;
    transform.target_std = stats.std;
    return "data.standardize_targets: per-target " + figures +
           "; the loss is on standardised targets, val mse and mae are in the targets' units";
  }
  // The MSE of predicting 0: about where an untrained model's loss starts.
  double largest_rms = 0, mse_of_zero = 0;
  for (std::size_t i = 0; i < stats.mean.size(); ++i) {
    const double rms = root_mean_square(stats, i);
    largest_rms = std::max(largest_rms, rms);
    mse_of_zero += rms * rms / static_cast<double>(stats.mean.size());
  }
  if (largest_rms <= kLargeRms) return "";
  return "regression targets far from unit scale (" + figures + "): the MSE loss starts near " + core::format_fixed(mse_of_zero, 0) +
         " and falls slowly; data.standardize_targets: true trains on (y - mean) / std and still reports val mse and mae in the targets' "
         "units";
}

}  // namespace gputrain::train
