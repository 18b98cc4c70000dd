#pragma once
// logging.alerts: the conditions a run is watched for, evaluated from its metrics stream (system
// readings, step lines, epochs). An alert fires once when its condition starts (or has lasted
// its minutes) and again only after the condition cleared. Each comes with what to do.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gputrain/device/system_sampler.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/metrics.hpp"

namespace gputrain::train {

struct Alert {
  std::string name;     ///< its logging.alerts key: gpu_memory_percent, grad_norm, ...
  std::string message;  ///< what was seen, and what to do
  double value = 0, threshold = 0;
};

class AlertRules {
 public:
  explicit AlertRules(const AlertsConfig& config) : config_(config) {}

  /// Each takes one piece of the stream and returns the alerts it fired.
  std::vector<Alert> system(const device::SystemSample& sample);
  std::vector<Alert> step(const StepMetrics& metrics);
  std::vector<Alert> epoch(const EpochMetrics& metrics);

  std::int64_t fired() const { return fired_; }
  /// The validation-loss watch, for a resume: the best loss and the epochs since it.
  std::pair<double, std::int64_t> improvement_state() const { return {best_loss_, epochs_since_best_}; }
  void restore_improvement(double best_loss, std::int64_t epochs_since_best);

 private:
  // A condition that must hold for `minutes` before it fires (0: at once).
  struct Sustained {
    std::optional<double> since;  // seconds the condition has held from
    bool fired = false;
    bool update(bool holds, double now, double minutes);
  };
  // A condition that fires when it starts.
  struct Edge {
    bool on = false;
    bool update(bool holds);
  };
  std::optional<Alert> memory_growth(const device::SystemSample& sample);
  void count(std::vector<Alert>& out, std::optional<Alert> alert);

  AlertsConfig config_;
  Sustained gpu_memory_, gpu_idle_;
  Edge hot_, slow_data_, large_grad_, growing_, stalled_;
  std::deque<std::pair<double, double>> rss_;  // (seconds, bytes) over the growth window
  double best_loss_ = 0;
  std::int64_t epochs_since_best_ = -1;  // -1: no validation loss seen yet
  std::int64_t fired_ = 0;
};

}  // namespace gputrain::train
