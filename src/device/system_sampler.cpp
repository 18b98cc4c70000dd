#include "gputrain/device/system_sampler.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gputrain/device/system_info.hpp"
#include "nvml_api.hpp"

namespace gputrain::device {

struct SystemSampler::Impl {
  std::unique_ptr<nvml::Library> nvml;
  nvml::Device gpu = nullptr;
  std::string unavailable;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::vector<SystemSample> samples;
  std::thread thread;

  SystemSample read() const {
    SystemSample s;
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    s.host_rss_bytes = host_rss_bytes();
    if (!gpu) return s;
    const auto& api = nvml->api();
    nvml::Utilization u{};
    if (api.utilization && api.utilization(gpu, &u) == nvml::kSuccess) s.gpu_utilization_percent = u.gpu;
    nvml::Memory m{};
    if (api.memory_info && api.memory_info(gpu, &m) == nvml::kSuccess) {
      s.gpu_memory_used_bytes = static_cast<double>(m.used);
      s.gpu_memory_total_bytes = static_cast<double>(m.total);
    }
    unsigned value = 0;
    if (api.temperature && api.temperature(gpu, nvml::kTemperatureGpu, &value) == nvml::kSuccess) s.gpu_temperature_c = value;
    if (api.power_usage && api.power_usage(gpu, &value) == nvml::kSuccess) s.gpu_power_watts = value / 1000.0;  // milliwatts
    if (api.clock && api.clock(gpu, nvml::kSm, &value) == nvml::kSuccess) s.gpu_sm_clock_mhz = value;
    return s;
  }
};

SystemSampler::SystemSampler(std::optional<unsigned> nvml_index, double period_seconds) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  if (nvml_index) {
    m.nvml = std::make_unique<nvml::Library>();
    if (!m.nvml->ready())
      m.unavailable = "NVML not available: " + m.nvml->error();
    else if (!m.nvml->api().handle_by_index || m.nvml->api().handle_by_index(*nvml_index, &m.gpu) != nvml::kSuccess)
      m.unavailable = "NVML does not know GPU " + std::to_string(*nvml_index);
  }
  const auto period = std::chrono::duration<double>(period_seconds);
  m.thread = std::thread([&m, period] {
    std::unique_lock<std::mutex> lock(m.mutex);
    while (!m.stopping) {
      lock.unlock();
      const auto sample = m.read();
      lock.lock();
      m.samples.push_back(sample);
      m.wake.wait_for(lock, period, [&m] { return m.stopping; });
    }
  });
}

SystemSampler::~SystemSampler() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::vector<SystemSample> SystemSampler::take() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<SystemSample> out;
  out.swap(impl_->samples);
  return out;
}

std::string SystemSampler::unavailable() const { return impl_->unavailable; }

}  // namespace gputrain::device
