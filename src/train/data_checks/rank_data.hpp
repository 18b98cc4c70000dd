#pragma once
// Every rank of a data-parallel run reads the data itself and takes every world-size-th sample of
// it: ranks that read different data (a PostgreSQL table another client changed between their
// reads, per-node copies of a file that differ) would train on shards that skip and repeat
// samples, silently. Private to the train area: the set-up refuses such a start.

#include "gputrain/data/sources.hpp"
#include "train/loop/rank_group.hpp"

namespace gputrain::train {

/// Throws UsageError on every rank when the ranks read different data: other numbers of training
/// or validation samples, or other rows by the source's checksum (PostgreSQL's provenance). One
/// small all-gather; nothing for a plain run.
void refuse_ranks_reading_different_data(RankGroup& ranks, const data::Sources& sources, const std::string& source);

}  // namespace gputrain::train
