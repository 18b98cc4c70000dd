#include "gputrain/sizing/memory_model.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gputrain::sizing {

std::uint64_t optimizer_state_bytes(const std::string& optimizer, double momentum, std::uint64_t parameter_bytes) {
  if (optimizer == "adam" || optimizer == "adamw") return 2 * parameter_bytes;
  if (optimizer == "sgd" && momentum > 0) return parameter_bytes;
  return 0;
}

std::uint64_t MemoryModel::workspace() const {
  const double explained = static_cast<double>(resident + known.gradients + known.optimizer_state);
  return fixed > explained ? static_cast<std::uint64_t>(fixed - explained) : 0;
}

double MemoryModel::predicted_peak(std::int64_t batch) const {
  return std::max(fixed + per_sample * static_cast<double>(batch), static_cast<double>(optimizer_peak));
}

std::int64_t MemoryModel::largest_batch(double target_fraction) const {
  const double free_after_fixed = static_cast<double>(limit) - fixed;
  if (free_after_fixed <= 0 || optimizer_peak > limit) return 0;
  if (per_sample <= 0) return INT64_MAX;  // nothing grows with the batch: only other bounds apply
  const double batch = std::floor(target_fraction * free_after_fixed / per_sample);
  return batch >= 9.2e18 ? INT64_MAX : static_cast<std::int64_t>(batch);
}

MemoryModel fit_memory_model(const StaticMemory& known, std::uint64_t resident, const ProbePoint& a,
                             const ProbePoint& b, std::uint64_t limit, std::string limit_source) {
  MemoryModel model;
  model.known = known;
  model.resident = resident;
  model.limit = limit;
  model.limit_source = std::move(limit_source);
  const auto& lo = a.batch < b.batch ? a : b;
  const auto& hi = a.batch < b.batch ? b : a;
  const double slope = (static_cast<double>(hi.peak) - static_cast<double>(lo.peak)) /
                       static_cast<double>(std::max<std::int64_t>(1, hi.batch - lo.batch));
  // Allocator rounding can make two close probes look flat or even shrinking; activations never
  // shrink with the batch, so then fall back to the average bytes per sample above what is known
  // to be fixed.
  const double known_fixed = static_cast<double>(resident + known.gradients + known.optimizer_state);
  const double average = (static_cast<double>(hi.peak) - known_fixed) / static_cast<double>(hi.batch);
  model.per_sample = slope > 0 ? slope : std::max(0.0, average);
  model.fixed = static_cast<double>(hi.peak) - model.per_sample * static_cast<double>(hi.batch);
  model.optimizer_peak = std::max(a.optimizer_peak, b.optimizer_peak);
  return model;
}

}  // namespace gputrain::sizing
