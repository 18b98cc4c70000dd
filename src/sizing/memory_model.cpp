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

MemoryModel fit_memory_model(const StaticMemory& known, std::uint64_t resident, const std::vector<ProbePoint>& points, std::uint64_t limit,
                             std::string limit_source) {
  MemoryModel model;
  model.known = known;
  model.resident = resident;
  model.limit = limit;
  model.limit_source = std::move(limit_source);
  if (points.empty()) return model;
  // Least squares: the allocator rounds each peak (2 MiB blocks on CUDA), so the line through two
  // close probes can be steeper or flatter than the truth by far; more points, further apart,
  // average the rounding out.
  double mean_batch = 0, mean_peak = 0;
  for (const auto& p : points) {
    mean_batch += static_cast<double>(p.batch);
    mean_peak += static_cast<double>(p.peak);
    model.optimizer_peak = std::max(model.optimizer_peak, p.optimizer_peak);
  }
  const auto n = static_cast<double>(points.size());
  mean_batch /= n;
  mean_peak /= n;
  double covariance = 0, variance = 0;
  for (const auto& p : points) {
    const double db = static_cast<double>(p.batch) - mean_batch;
    covariance += db * (static_cast<double>(p.peak) - mean_peak);
    variance += db * db;
  }
  const double slope = variance > 0 ? covariance / variance : 0;
  // Rounding can make close probes look flat or even shrinking; activations never shrink with
  // the batch, so then fall back to the average bytes per sample above what is known to be fixed.
  const auto& top = *std::max_element(points.begin(), points.end(), [](const auto& x, const auto& y) { return x.batch < y.batch; });
  const double known_fixed = static_cast<double>(resident + known.gradients + known.optimizer_state);
  const double average = (static_cast<double>(top.peak) - known_fixed) / static_cast<double>(std::max<std::int64_t>(1, top.batch));
  if (slope > 0) {
    model.per_sample = slope;
    model.fixed = mean_peak - slope * mean_batch;
  } else {
    model.per_sample = std::max(0.0, average);
    model.fixed = static_cast<double>(top.peak) - model.per_sample * static_cast<double>(top.batch);
  }
  return model;
}

MemoryModel fit_memory_model(const StaticMemory& known, std::uint64_t resident, const ProbePoint& a, const ProbePoint& b,
                             std::uint64_t limit, std::string limit_source) {
  return fit_memory_model(known, resident, std::vector<ProbePoint>{a, b}, limit, std::move(limit_source));
}

}  // namespace gputrain::sizing
