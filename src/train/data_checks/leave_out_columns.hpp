#pragma once
// How to leave some input columns out of a run, in the key the user chose: data.exclude, or
// data.features when they listed the columns. Shared by the data checks that name columns.

#include <string>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// "leave it out with data.exclude: [id, b]", "leave them out of data.features: [a, c]", or, for
/// an array's features (`names` empty), "drop that column from the inputs' array".
std::string leave_out_fix(const DataConfig& data, const std::vector<std::string>& names, const std::vector<std::string>& left_out);

}  // namespace gputrain::train
