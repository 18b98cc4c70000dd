#pragma once
// The order samples are visited in: a seeded permutation per epoch that is a pure function of
// (seed, epoch), split across ranks, so a resumed run that knows its epoch and position sees
// exactly the samples an uninterrupted run would, and every rank knows its share without talking.

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gputrain::data {

class EpochSampler {
 public:
  /// `rank` of `world_size` ranks; each takes every world_size-th index of the epoch's permutation
  /// (rank r: positions r, r + world, ...), so the shards are disjoint and cover every sample once.
  /// Shard sizes differ by at most one; drop_last trims them all to the smallest instead.
  EpochSampler(std::int64_t size, bool shuffle, std::uint64_t seed, std::int64_t rank = 0, std::int64_t world_size = 1,
               bool drop_last = false);
  /// This rank's indices (int64, CPU) for epoch `epoch`.
  at::Tensor order(std::int64_t epoch) const;
  /// Samples in this rank's shard of every epoch.
  std::int64_t size() const;

 private:
  std::int64_t size_, rank_, world_;
  bool shuffle_, drop_last_;
  std::uint64_t seed_;
};

}  // namespace gputrain::data
