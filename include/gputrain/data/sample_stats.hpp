#pragma once
// data.standardize for data read from files (an image folder): the channel statistics of a bounded
// sample of the training set, decoded as the cache would decode it.

#include <cstdint>
#include <memory>

#include "gputrain/data/batch.hpp"
#include "gputrain/data/dataset.hpp"

namespace gputrain::data {

struct MeasuredStats {
  ChannelStats stats;
  std::int64_t measured = 0;  ///< samples the figures come from
  std::int64_t skipped = 0;   ///< unreadable samples among those chosen
};

/// Mean and std per channel (ChannelStats) over `max_samples` samples of `set` (all of them when it
/// has no more; else a random choice seeded by `seed`, read in file order), decoded `threads` at a
/// time in chunks of at most 256 MiB, so memory stays bounded whatever the dataset's size. Throws
/// UsageError when no chosen sample can be read.
MeasuredStats measure_sample_stats(const std::shared_ptr<const Dataset>& set, std::int64_t max_samples, int threads, std::uint64_t seed);

}  // namespace gputrain::data
