#include "gputrain/data/epoch_sampler.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "gputrain/core/error.hpp"

namespace gputrain::data {

EpochSampler::EpochSampler(std::int64_t size, bool shuffle, std::uint64_t seed, std::int64_t rank, std::int64_t world_size, bool drop_last)
    : size_(size), rank_(rank), world_(world_size), shuffle_(shuffle), drop_last_(drop_last), seed_(seed) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw Error("sampler: rank " + std::to_string(rank) + " of world size " + std::to_string(world_size) + " is impossible",
                "check RANK and WORLD_SIZE");
}

std::int64_t EpochSampler::size() const {
  if (drop_last_) return size_ / world_;
  return (size_ - rank_ + world_ - 1) / world_;
}

at::Tensor EpochSampler::order(std::int64_t epoch) const {
  at::Tensor all;
  if (!shuffle_) {
    all = at::arange(size_, at::kLong);
  } else {
    // Its own generator: the global one also drives dropout and must not shift the data order.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed_ * 1000003ULL + static_cast<std::uint64_t>(epoch));
    all = at::randperm(size_, gen, at::kLong);
  }
  if (world_ == 1) return all;
  return all.slice(0, rank_, size_, world_).slice(0, 0, size()).contiguous();
}

}  // namespace gputrain::data
