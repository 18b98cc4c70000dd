#pragma once
// A feature that is a row number or an id (a database export's first column, a DataFrame's index
// saved as a named column) says nothing about new rows, yet in a file sorted by date or by the
// label it tells the model the answer, and the validation figures flatter it: on a house-price
// CSV sorted by price, an id column took the val MAE from 17,895 to 3,225. Private to the train
// area: open_data (run_setup.cpp) calls it.

#include <string>
#include <vector>

#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// A line naming the features that look like ids, with the setting that leaves them out (the
/// key the user chose for CSV columns: data.exclude, or data.features when they listed them); empty
/// when there are none, fewer than 100 samples, or the samples are not float vectors in memory.
/// `names` are the CSV columns in the inputs' order; array features are named by index.
///
/// A feature looks like an id when, over the first 65,536 samples in file order, it is
///  - whole numbers rising from each sample to the next, densely (last - first < 2 x samples, so
///    that rows held out for validation leave gaps but hourly timestamps in seconds do not count), or
///  - a different whole number in every sample, under a name that says id ("id", "user_id", "userId",
///    "index").
std::string id_column_hint(const Config& config, const data::Dataset& train, const std::vector<std::string>& names);

}  // namespace gputrain::train
