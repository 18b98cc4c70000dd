#include "alert_rules.hpp"

#include <cmath>

#include "gputrain/core/units.hpp"

namespace gputrain::train {
namespace {

// Host memory growth is measured over the last half hour, once 10 minutes of it are there, and
// after the first 5 minutes of the run (the data, the allocator's and CUDA's pools settle then).
constexpr double kGrowthWindow = 1800, kGrowthSpan = 600, kGrowthSettle = 300;

std::string fixed(double value, int digits) { return core::format_fixed(value, digits); }

std::string minutes_text(double minutes) { return fixed(minutes, minutes == std::floor(minutes) ? 0 : 1) + " min"; }

}  // namespace

bool AlertRules::Sustained::update(bool holds, double now, double minutes) {
  if (!holds) {
    since.reset();
    fired = false;
    return false;
  }
  if (!since) since = now;
  if (fired || now - *since < minutes * 60) return false;
  fired = true;
  return true;
}

bool AlertRules::Edge::update(bool holds) {
  const bool starts = holds && !on;
  on = holds;
  return starts;
}

void AlertRules::count(std::vector<Alert>& out, std::optional<Alert> alert) {
  if (!alert) return;
  ++fired_;
  out.push_back(std::move(*alert));
}

std::vector<Alert> AlertRules::system(const device::SystemSample& s) {
  std::vector<Alert> out;
  const auto& c = config_;
  if (c.gpu_memory_percent && s.gpu_memory_used_bytes && s.gpu_memory_total_bytes && *s.gpu_memory_total_bytes > 0) {
    const double percent = 100 * *s.gpu_memory_used_bytes / *s.gpu_memory_total_bytes;
    if (gpu_memory_.update(percent > *c.gpu_memory_percent, s.seconds, c.gpu_memory_minutes))
      count(out, Alert{"gpu_memory_percent",
                       "GPU memory " + fixed(percent, 0) + " % used for " + minutes_text(c.gpu_memory_minutes) + " (over " +
                           fixed(*c.gpu_memory_percent, 0) + " %): a spike can end in out-of-memory; leave headroom with a smaller " +
                           "train.batch_size or device.max_memory (logging.alerts.gpu_memory_percent: off to silence)",
                       percent, *c.gpu_memory_percent});
  }
  if (c.gpu_utilization_percent && s.gpu_utilization_percent) {
    const double busy = *s.gpu_utilization_percent;
    if (gpu_idle_.update(busy < *c.gpu_utilization_percent, s.seconds, c.gpu_utilization_minutes))
      count(out, Alert{"gpu_utilization_percent",
                       "GPU busy " + fixed(busy, 0) + " % and under " + fixed(*c.gpu_utilization_percent, 0) + " % for " +
                           minutes_text(c.gpu_utilization_minutes) +
                           ": it waits for work; `gputrain profile --step CONFIG` says whether for data (data.cache: vram) or for "
                           "the host (a larger train.batch_size, train.cuda_graphs)",
                       busy, *c.gpu_utilization_percent});
  }
  if (c.temperature_c && s.gpu_temperature_c && hot_.update(*s.gpu_temperature_c > *c.temperature_c))
    count(out, Alert{"temperature_c",
                     "GPU at " + fixed(*s.gpu_temperature_c, 0) + " °C (over " + fixed(*c.temperature_c, 0) +
                         " °C): it lowers its clocks to cool down; check the cooling and the airflow "
                         "(nvidia-smi -q -d TEMPERATURE,PERFORMANCE shows any throttling)",
                     *s.gpu_temperature_c, *c.temperature_c});
  count(out, memory_growth(s));
  return out;
}

std::optional<Alert> AlertRules::memory_growth(const device::SystemSample& s) {
  const auto& limit = config_.memory_growth_gb_per_hour;
  if (!limit || s.host_rss_bytes <= 0 || s.seconds < kGrowthSettle) return std::nullopt;
  rss_.emplace_back(s.seconds, s.host_rss_bytes);
  while (s.seconds - rss_.front().first > kGrowthWindow) rss_.pop_front();
  const double span = s.seconds - rss_.front().first;
  if (span < kGrowthSpan) return std::nullopt;
  const double gb_per_hour = (s.host_rss_bytes - rss_.front().second) / 1e9 / (span / 3600);
  if (!growing_.update(gb_per_hour > *limit)) return std::nullopt;
  return Alert{"memory_growth_gb_per_hour",
               "host memory growing " + fixed(gb_per_hour, 1) + " GB an hour over the last " + minutes_text(span / 60) + " (over " +
                   fixed(*limit, 1) + " GB/h; " + fixed(s.host_rss_bytes / 1e9, 1) +
                   " GB now): a leak, often tensors a callback keeps from every step, or a cache that never stops growing",
               gb_per_hour, *limit};
}

std::vector<Alert> AlertRules::step(const StepMetrics& m) {
  std::vector<Alert> out;
  const auto& c = config_;
  const double wait_ms = 1000 * m.data_seconds;
  if (c.data_wait_ms && slow_data_.update(wait_ms > *c.data_wait_ms))
    count(out, Alert{"data_wait_ms",
                     "waiting " + fixed(wait_ms, 0) + " ms a step for data by step " + std::to_string(m.step) + " (over " +
                         fixed(*c.data_wait_ms, 0) +
                         " ms): the loader does not keep up; data.cache: vram (or ram) holds the data once, more "
                         "data.num_workers decode faster",
                     wait_ms, *c.data_wait_ms});
  if (c.grad_norm && m.grad_norm && large_grad_.update(*m.grad_norm > *c.grad_norm))
    count(out, Alert{"grad_norm",
                     "gradient norm " + fixed(*m.grad_norm, 2) + " at step " + std::to_string(m.step) + " (over " + fixed(*c.grad_norm, 2) +
                         "): the steps are large, a sign of divergence to come; set train.clip_grad_norm, or lower optimizer.lr",
                     *m.grad_norm, *c.grad_norm});
  return out;
}

std::vector<Alert> AlertRules::epoch(const EpochMetrics& m) {
  std::vector<Alert> out;
  if (!m.val_loss || !std::isfinite(*m.val_loss)) return out;
  if (epochs_since_best_ < 0 || *m.val_loss < best_loss_) {
    best_loss_ = *m.val_loss;
    epochs_since_best_ = 0;
  } else {
    ++epochs_since_best_;
  }
  const auto& limit = config_.no_improvement_epochs;
  if (limit && stalled_.update(static_cast<double>(epochs_since_best_) >= *limit))
    count(out, Alert{"no_improvement_epochs",
                     "val_loss has not improved for " + std::to_string(epochs_since_best_) + " epochs (best " + fixed(best_loss_, 4) +
                         "): more epochs may not help; train.early_stop_patience ends such runs by itself, and a lower "
                         "optimizer.lr or a scheduler may get it moving",
                     static_cast<double>(epochs_since_best_), *limit});
  return out;
}

void AlertRules::restore_improvement(double best_loss, std::int64_t epochs_since_best) {
  best_loss_ = best_loss;
  epochs_since_best_ = epochs_since_best;
}

}  // namespace gputrain::train
