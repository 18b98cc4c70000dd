#include "gputrain/device/utilization.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include "nvml_api.hpp"

namespace gputrain::device {

struct UtilizationSampler::Impl {
  nvml::Library nvml;
  nvml::Device handle = nullptr;
  std::atomic<bool> running{true};
  std::thread thread;
  double sum = 0;
  long samples = 0;
  std::string unavailable;
};

UtilizationSampler::UtilizationSampler(unsigned index, int period_ms) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  const auto& api = m.nvml.api();
  if (!m.nvml.ready()) {
    m.unavailable = "NVML not available: " + m.nvml.error();
    return;
  }
  if (!api.utilization || !api.handle_by_index || api.handle_by_index(index, &m.handle) != nvml::kSuccess) {
    m.unavailable = "NVML cannot report this GPU's utilisation";
    return;
  }
  m.thread = std::thread([&m, period_ms] {
    while (m.running) {
      nvml::Utilization u{};
      if (m.nvml.api().utilization(m.handle, &u) == nvml::kSuccess) {
        m.sum += u.gpu;
        ++m.samples;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
    }
  });
}

UtilizationSampler::~UtilizationSampler() { stop(); }

std::optional<double> UtilizationSampler::stop() {
  auto& m = *impl_;
  m.running = false;
  if (m.thread.joinable()) m.thread.join();
  if (m.samples == 0) return std::nullopt;
  return m.sum / static_cast<double>(m.samples);
}

const std::string& UtilizationSampler::unavailable() const { return impl_->unavailable; }

}  // namespace gputrain::device
