#include "gputrain/data/sample_stats.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "gputrain/core/error.hpp"
#include "subset.hpp"

namespace gputrain::data {

MeasuredStats measure_sample_stats(const std::shared_ptr<const Dataset>& set, std::int64_t max_samples, int threads, std::uint64_t seed) {
  const std::int64_t total = set->size();
  at::Tensor chosen = at::arange(total, at::kLong);
  if (total > max_samples) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0x5bd1e9955bd1e995ULL);  // apart from the split's and the orders' seeds
    chosen = std::get<0>(at::randperm(total, gen, at::kLong).slice(0, 0, max_samples).sort());
  }
  constexpr std::uint64_t kChunkBytes = 256ULL << 20;
  const auto per_chunk = static_cast<std::int64_t>(
      std::max<std::uint64_t>(1, kChunkBytes / std::max<std::uint64_t>(1, static_cast<std::uint64_t>(set->layout().input_bytes()))));
  ChannelSums sums;
  MeasuredStats out;
  for (std::int64_t start = 0; start < chosen.size(0); start += per_chunk) {
    const auto indices = chosen.slice(0, start, std::min(chosen.size(0), start + per_chunk));
    const auto part = materialize(*subset(set, indices, set->description()), threads);
    out.skipped += static_cast<std::int64_t>(part.skipped.size());
    if (part.set.size() > 0) sums.add(part.set.inputs);
  }
  if (sums.samples() == 0)
    throw UsageError(
        "data.standardize: none of the " + std::to_string(chosen.size(0)) + " samples chosen from " + set->description() + " can be read",
        "check the files, or set data.mean and data.std instead");
  out.stats = sums.stats();
  out.measured = sums.samples();
  return out;
}

}  // namespace gputrain::data
