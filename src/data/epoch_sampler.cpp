#include "gputrain/data/epoch_sampler.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace gputrain::data {

at::Tensor EpochSampler::order(std::int64_t epoch) const {
  if (!shuffle_) return at::arange(size_, at::kLong);
  // Its own generator: the global one also drives dropout and must not shift the data order.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed_ * 1000003ULL + static_cast<std::uint64_t>(epoch));
  return at::randperm(size_, gen, at::kLong);
}

}  // namespace gputrain::data
