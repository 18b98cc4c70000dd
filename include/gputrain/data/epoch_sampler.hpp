#pragma once
// The order samples are visited in: a seeded permutation per epoch, so a resumed run that knows
// its epoch and position sees exactly the samples an uninterrupted run would.

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gputrain::data {

class EpochSampler {
 public:
  EpochSampler(std::int64_t size, bool shuffle, std::uint64_t seed) : size_(size), shuffle_(shuffle), seed_(seed) {}
  /// The indices (int64, CPU) of epoch `epoch`: a permutation when shuffling, else 0..size-1.
  at::Tensor order(std::int64_t epoch) const;
  std::int64_t size() const { return size_; }

 private:
  std::int64_t size_;
  bool shuffle_;
  std::uint64_t seed_;
};

}  // namespace gputrain::data
