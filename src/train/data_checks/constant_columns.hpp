#pragma once
// A feature that holds one value in every training sample (a column filled by a default, a
// filter in the export that fixed it) tells the model nothing; a regression target that does
// leaves it nothing to learn but that number. Private to the train area: open_data
// (run_setup.cpp) calls it.

#include <string>
#include <vector>

#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// A note naming the constant features, with the setting that leaves them out, and a warning for
/// each constant regression target; none when there are none, fewer than 10 samples, or the
/// samples are not float vectors in memory. `names` are the CSV columns in the inputs' order; array
/// features are named by index.
std::vector<std::string> constant_column_notes(const Config& config, const data::Dataset& train, const std::vector<std::string>& names);

}  // namespace gputrain::train
