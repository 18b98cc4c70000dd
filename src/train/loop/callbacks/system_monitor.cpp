// System metrics and alerts (logging.system_every, logging.alerts): rank 0 reads its GPU through
// NVML and its memory every N seconds on a thread of its own (device::SystemSampler), and the
// readings join the metrics stream at the next step's end as `kind: system` records; the alert
// rules watch that stream, the step lines and the epochs, and say each alert as one warning line
// and a `kind: alert` record. FitResult::alerts counts them for the run's summary.
#include <ATen/ATen.h>

#include <memory>

#include "builtin_callbacks.hpp"
#include "gputrain/device/system_sampler.hpp"
#include "gputrain/train/trainer.hpp"
#include "train/monitor/alert_rules.hpp"

namespace gputrain::train {
namespace {

MetricRecord system_record(const device::SystemSample& s, std::int64_t step) {
  MetricRecord r{"system", step, {}, {}};
  const auto add = [&](const char* name, const std::optional<double>& value) {
    if (value) r.figures.emplace_back(name, *value);
  };
  add("gpu_utilization_percent", s.gpu_utilization_percent);
  add("gpu_memory_used_bytes", s.gpu_memory_used_bytes);
  add("gpu_memory_total_bytes", s.gpu_memory_total_bytes);
  add("gpu_temperature_c", s.gpu_temperature_c);
  add("gpu_power_watts", s.gpu_power_watts);
  add("gpu_sm_clock_mhz", s.gpu_sm_clock_mhz);
  r.figures.emplace_back("host_rss_bytes", s.host_rss_bytes);
  return r;
}

// The GPU the model is on, as NVML counts them (CUDA's index: equal unless CUDA_VISIBLE_DEVICES
// reorders the GPUs); none on the CPU.
std::optional<unsigned> gpu_of(Model& model) {
  const auto device = model_device(model);
  return device.is_cuda() ? std::optional<unsigned>(static_cast<unsigned>(device.index())) : std::nullopt;
}

class SystemMonitor final : public Callback {
 public:
  explicit SystemMonitor(const Config& config) : every_(config.logging.system_every), rules_(config.logging.alerts) {}
  std::string name() const override { return "system_monitor"; }

  void on_fit_start(RunControl& run) override {
    if (every_ <= 0 || !run.writer()) return;
    const auto gpu = gpu_of(run.model());
    sampler_ = std::make_unique<device::SystemSampler>(gpu, every_);
    if (gpu && !sampler_->unavailable().empty())
      run.note("system metrics: the host's memory only (" + sampler_->unavailable() + "); GPU alerts cannot fire");
  }
  void on_step_end(RunControl& run, std::int64_t step) override { drain(run, step); }
  void on_log(RunControl& run, const StepMetrics& metrics, const LossWindow&) override { say(run, metrics.step, rules_.step(metrics)); }
  void on_validation_end(RunControl& run, const EpochMetrics& metrics) override { say(run, metrics.step, rules_.epoch(metrics)); }
  void on_fit_end(RunControl& run, FitResult& result) override {
    if (sampler_) drain(run, result.steps);
    sampler_.reset();
    result.alerts = rules_.fired();
  }
  CallbackState state_dict() const override {
    const auto [best, since] = rules_.improvement_state();
    return {{"best_val_loss", best}, {"epochs_since_best", static_cast<double>(since)}};
  }
  void load_state_dict(const CallbackState& state) override {
    const auto best = get(state, "best_val_loss"), since = get(state, "epochs_since_best");
    if (best && since) rules_.restore_improvement(*best, static_cast<std::int64_t>(*since));
  }

 private:
  void drain(RunControl& run, std::int64_t step) {
    if (!sampler_) return;
    for (const auto& sample : sampler_->take()) {
      run.add_record(system_record(sample, step));
      say(run, step, rules_.system(sample));
    }
  }
  static void say(RunControl& run, std::int64_t step, const std::vector<Alert>& alerts) {
    for (const auto& alert : alerts) {
      run.warn("alert " + alert.name + ": " + alert.message);
      run.add_record(MetricRecord{
          "alert", step, {{"value", alert.value}, {"threshold", alert.threshold}}, {{"alert", alert.name}, {"message", alert.message}}});
    }
  }

  double every_;
  AlertRules rules_;
  std::unique_ptr<device::SystemSampler> sampler_;
};

}  // namespace

std::unique_ptr<Callback> system_monitor_callback(const Config& config) { return std::make_unique<SystemMonitor>(config); }

}  // namespace gputrain::train
