#pragma once
// Samples with no values (an array of shape [N, 0], an empty PostgreSQL array in every row): a
// model of no inputs divides by zero in its first statistics, so they are refused as data.

#include "gputrain/data/dataset.hpp"
#include "gputrain/data/sources.hpp"

namespace gputrain::data {

/// Throws UsageError when `set`'s samples, or its regression targets, hold no values: its shape,
/// and for `source` (data.source) where such a dimension comes from.
void refuse_empty_samples(const Dataset& set, const std::string& source);

}  // namespace gputrain::data
