#pragma once
// GPU utilisation as NVML reports it (percent of time a kernel ran in the last sample period),
// sampled on a background thread while something runs: `gputrain profile --step` asks "is my
// GPU starving?" with it.

#include <memory>
#include <optional>
#include <string>

namespace gputrain::device {

class UtilizationSampler {
 public:
  /// Starts sampling GPU `index` (an NVML index) every `period_ms`; does nothing without NVML.
  explicit UtilizationSampler(unsigned index, int period_ms = 100);
  ~UtilizationSampler();
  UtilizationSampler(const UtilizationSampler&) = delete;
  UtilizationSampler& operator=(const UtilizationSampler&) = delete;

  /// Stops sampling; the mean utilisation in percent, or nullopt when NVML gave no sample.
  std::optional<double> stop();
  /// Why there is no figure ("NVML not available: ..."); empty when sampling works.
  const std::string& unavailable() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputrain::device
