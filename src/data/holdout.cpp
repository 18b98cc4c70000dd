#include "gputrain/data/holdout.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "subset.hpp"

namespace gputrain::data {

HeldOut hold_out(std::shared_ptr<const Dataset> set, double fraction, std::uint64_t seed) {
  const std::int64_t total = set->size();
  const auto held = static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(total)));
  if (held < 1 || held >= total)
    throw UsageError("data.val_fraction " + c10::str(fraction) + " of " + core::counted(total, "sample") + " leaves " +
                         (held < 1 ? "no validation sample" : "no training sample"),
                     held < 1 ? "raise data.val_fraction, or set it to 0 to train without validation"
                              : "lower data.val_fraction");
  // A generator of its own, seeded apart from the epoch orders' (EpochSampler), so that the split
  // does not move when the training order does.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0x9e3779b97f4a7c15ULL);
  const auto order = at::randperm(total, gen, at::kLong);
  const auto val_indices = std::get<0>(order.slice(0, 0, held).sort());
  const auto train_indices = std::get<0>(order.slice(0, held).sort());
  return {subset(set, train_indices, set->description() + ": " + std::to_string(total - held) + " for training"),
          subset(set, val_indices, std::to_string(held) + " held out for validation (data.val_fraction " + c10::str(fraction) + ")")};
}

}  // namespace gputrain::data
