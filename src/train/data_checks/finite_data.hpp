#pragma once
// NaN and inf in the data: a run that meets one diverges at the first batch that holds it, and no
// setting saves it, so arrays held in memory are searched before the first step. Private to the
// train area: open_data (run_setup.cpp) refuses such data.

#include <cstdint>

#include "gputrain/data/sources.hpp"
#include "gputrain/data/tensor_dataset.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// The samples of an in-memory dataset whose inputs or float targets hold NaN or inf.
struct NonFiniteSamples {
  std::int64_t samples = 0;  ///< searched
  std::int64_t count = 0;    ///< holding NaN or inf
  std::int64_t first = -1;   ///< the first of them, or -1
};
NonFiniteSamples find_nonfinite(const data::TensorDataset& set);

/// Throws UsageError when the training or validation arrays (in memory, float) hold NaN or inf:
/// how many samples, the first by its origin ("x.npy sample 17") and what it holds, and for .npy
/// files the numpy line that drops those samples from features and labels alike.
void refuse_nonfinite_samples(const Config& config, const data::Sources& sources);

}  // namespace gputrain::train
