#pragma once
// Features and regression targets on the scale a model learns from: data.standardize measures the
// features' mean and std, data.standardize_targets the targets'; without them, a hint when the
// values are far from unit scale (heights in cm, prices in the 100,000s), where training crawls.
// Private to the train area: open_data (run_setup.cpp) calls these.

#include <memory>
#include <string>
#include <vector>

#include "gputrain/data/batch.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// data.standardize: sets config.data.mean and config.data.std to the training set's own, per
/// feature of vectors or per channel of images (an image folder on a seeded choice of up to 10,000
/// images). Returns what was measured, for the run's log. Throws UsageError for other shapes.
std::string standardize_inputs(Config& config, const std::shared_ptr<const data::Dataset>& train);

/// Without normalisation: a hint naming the features (by `names` when given, else by index) whose
/// root mean square is above 10, and data.standardize as the fix; empty when there are none or the
/// samples are not float vectors held in memory. Measured on up to 65,536 evenly spaced samples.
std::string feature_scale_hint(const data::Dataset& train, const std::vector<std::string>& names);

/// Regression: with data.standardize_targets, sets transform.target_mean and target_std to the
/// training targets' own and says so; without it, a hint when a target's root mean square is above
/// 10. Empty for classification. Throws UsageError when the targets are not in memory.
std::string scale_targets(const Config& config, const data::Dataset& train, data::BatchTransform& transform);

}  // namespace gputrain::train
