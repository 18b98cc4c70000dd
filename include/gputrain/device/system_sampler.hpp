#pragma once
// The machine's figures read on a thread of its own every few seconds (logging.system_every): the
// GPU's through NVML (utilisation, memory, temperature, power, SM clock) and this process's
// resident memory. Nothing here touches a CUDA stream: reading never slows a step.

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::device {

/// One reading. The GPU's figures are absent without NVML, or when it watches no GPU.
struct SystemSample {
  double seconds = 0;  ///< since the sampler started
  std::optional<double> gpu_utilization_percent, gpu_memory_used_bytes, gpu_memory_total_bytes;
  std::optional<double> gpu_temperature_c, gpu_power_watts, gpu_sm_clock_mhz;
  double host_rss_bytes = 0;
};

class SystemSampler {
 public:
  /// Reads at once, then every `period_seconds`: GPU `nvml_index` through NVML (nullopt: the host
  /// alone) and the process's memory.
  SystemSampler(std::optional<unsigned> nvml_index, double period_seconds);
  ~SystemSampler();
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  /// The readings since the last call, oldest first.
  std::vector<SystemSample> take();
  /// Why the GPU's figures are missing ("NVML not available: ..."); empty when they are read.
  std::string unavailable() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputrain::device
