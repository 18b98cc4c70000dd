#include "human_lines.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "gputrain/core/printable.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::train {

std::string format_duration(double seconds) {
  // An ETA past a million hours (114 years: train.epochs set huge) says only that; a larger
  // double, or NaN, would not even fit the long it is counted in.
  constexpr double kLongest = 3600.0 * 1e6;
  if (!(seconds < kLongest)) return "over 1000000:00:00";
  const long total = seconds < 0 ? 0 : static_cast<long>(seconds + 0.5);
  char buf[32];
  if (total >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", total / 60, total % 60);
  return buf;
}

std::string header_line(const RunInfo& i) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "training %s (%s) on %s, %s, batch %lld%s x %lld accumulation, %lld step%s (%lld per epoch)%s; run dir %s",
                i.model.c_str(), core::format_parameter_count(i.parameters).c_str(), i.device.c_str(), i.precision.c_str(),
                static_cast<long long>(i.batch_size), i.batch_size_auto ? " (auto)" : "", static_cast<long long>(i.grad_accum),
                static_cast<long long>(i.total_steps), i.total_steps == 1 ? "" : "s", static_cast<long long>(i.steps_per_epoch),
                i.start_step > 0 ? (", resuming at step " + std::to_string(i.start_step)).c_str() : "", i.run_dir.c_str());
  if (!i.distributed.empty()) return std::string(buf) + "; " + i.distributed + " (batch per rank)";
  return buf;
}

std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string first_values(const std::vector<double>& values) {
  std::ostringstream text;
  text.precision(6);
  text << "[";
  for (std::size_t i = 0; i < values.size() && i < 8; ++i) text << (i ? ", " : "") << values[i];
  if (values.size() > 8) text << ", ... (" << values.size() << " in all)";
  text << "]";
  return text.str();
}

std::string class_label(std::int64_t id, const std::vector<std::string>& class_names) {
  return id < static_cast<std::int64_t>(class_names.size()) ? core::quoted(class_names[static_cast<std::size_t>(id)])
                                                            : "class " + std::to_string(id);
}

std::string plain_metric(const std::string& metric) {
  const std::string suffix = "_ema";
  const bool ema = metric.size() > suffix.size() && metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
  return ema ? metric.substr(0, metric.size() - suffix.size()) : metric;
}

bool is_accuracy_metric(const std::string& metric) {
  const auto plain = plain_metric(metric);
  return plain == "val_accuracy" || plain == "val_balanced_accuracy";
}

std::string metric_text(const std::string& metric, double value) {
  if (is_accuracy_metric(metric)) return core::format_fixed(100.0 * value, 2) + "%";
  return core::format_fixed(value, 4);
}

std::string bar_line(const StepMetrics& m, std::int64_t total_steps, std::int64_t epochs, int columns) {
  const double done = total_steps > 0 ? double(m.step) / double(total_steps) : 0.0;
  const std::string head = "epoch " + std::to_string(m.epoch + 1) + "/" + std::to_string(epochs) + " ";
  const std::string count = " " + std::to_string(m.step) + "/" + std::to_string(total_steps);
  char loss[32], rate[48], data[32];
  std::snprintf(loss, sizeof loss, " loss %.4f", m.loss);
  std::snprintf(rate, sizeof rate, " %.0f samples/s", m.samples_per_second);
  std::snprintf(data, sizeof data, " data %.0f%%", m.data_stall_percent());
  const std::string eta = " ETA " + format_duration(m.eta_seconds);
  std::vector<std::string> figures{loss, rate, data};  // dropped from the back as the width shrinks
  const auto room = static_cast<std::size_t>(std::max(columns - 1, 1));
  for (;;) {
    std::string tail = count;
    for (const auto& f : figures) tail += f;
    tail += eta;
    const std::size_t fixed = head.size() + 2 + tail.size();  // 2: the brackets
    const int width = fixed + 24 <= room ? 24 : static_cast<int>(room) - static_cast<int>(fixed);
    if (width >= 8 || figures.empty()) {
      const int bar = std::max(width, 0);
      const int filled = std::clamp(static_cast<int>(done * bar), 0, bar);
      auto line = head + "[" + std::string(static_cast<std::size_t>(filled), '#') +
                  std::string(static_cast<std::size_t>(bar - filled), '-') + "]" + tail;
      return line.substr(0, room);
    }
    figures.pop_back();
  }
}

std::string step_line(const StepMetrics& m, std::int64_t total_steps) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "step %lld/%lld epoch %lld loss %.4f lr %s %.0f samples/s data stall %.1f%% ETA %s",
                static_cast<long long>(m.step), static_cast<long long>(total_steps), static_cast<long long>(m.epoch + 1), m.loss,
                short_number(m.lr).c_str(), m.samples_per_second, m.data_stall_percent(), format_duration(m.eta_seconds).c_str());
  std::string line = buf;
  if (m.loss_scale != 1.0) line += " scale " + core::format_fixed(m.loss_scale, 0);
  if (m.skipped_steps > 0) line += " skipped " + std::to_string(m.skipped_steps);
  if (m.oom_events > 0) line += " oom " + std::to_string(m.oom_events) + " (micro-batch " + std::to_string(m.micro_batch) + ")";
  if (m.memory_reserved > 0)
    line += " mem " + core::format_bytes(m.memory_allocated) + " / " + core::format_bytes(m.memory_reserved) + " (peak " +
            core::format_bytes(m.memory_peak) + ")";
  return line;
}

std::string epoch_line(const EpochMetrics& m, std::int64_t epochs, bool show_balanced_accuracy) {
  std::string line = "epoch " + std::to_string(m.epoch + 1) + "/" + std::to_string(epochs) + " done in " + format_duration(m.seconds) +
                     ": " + (m.train_loss ? "train loss " + core::format_fixed(*m.train_loss, 4) : "its steps ran before the resume");
  if (m.val_loss) line += ", val loss " + metric_text("val_loss", *m.val_loss);
  if (m.val_accuracy) line += ", val accuracy " + metric_text("val_accuracy", *m.val_accuracy);
  if (m.val_balanced_accuracy && show_balanced_accuracy)
    line += " (balanced " + metric_text("val_balanced_accuracy", *m.val_balanced_accuracy) + ")";
  if (m.val_mse) line += ", val mse " + metric_text("val_mse", *m.val_mse);
  if (m.val_mae) line += ", val mae " + metric_text("val_mae", *m.val_mae);
  for (const auto& [name, value] : m.extra)
    if (plain_metric(name) != "val_balanced_accuracy" || show_balanced_accuracy) line += ", " + name + " " + metric_text(name, value);
  return line;
}

// Up to this many classes every one is listed; beyond, those with the lowest recall.
constexpr std::size_t kListedClasses = 8, kLowestClasses = 3;

std::string class_report_line(const EpochMetrics& m, const std::vector<std::string>& class_names, const std::string& heading) {
  std::vector<std::size_t> shown;
  for (std::size_t c = 0; c < m.val_class_samples.size(); ++c)
    if (m.val_class_samples[c] > 0) shown.push_back(c);
  if (shown.empty()) return "";
  const auto percent = [](std::int64_t part, std::int64_t whole) {
    return core::format_fixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 1) + " %";
  };
  const auto recall = [&m](std::size_t c) {
    return static_cast<double>(m.val_class_right[c]) / static_cast<double>(m.val_class_samples[c]);
  };
  const bool lowest = shown.size() > kListedClasses;
  if (lowest) {
    std::stable_sort(shown.begin(), shown.end(), [&](std::size_t a, std::size_t b) { return recall(a) < recall(b); });
    shown.resize(kLowestClasses);
  }
  std::string line =
      heading +
      (lowest ? ", the " + std::to_string(kLowestClasses) + " lowest recalls of " + std::to_string(m.val_class_samples.size()) : "") + ": ";
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto c = shown[i];
    const auto right = m.val_class_right[c], predicted = c < m.val_class_predicted.size() ? m.val_class_predicted[c] : 0;
    line += (i ? "; " : "") + class_label(static_cast<std::int64_t>(c), class_names) + " " + std::to_string(right) + " of " +
            std::to_string(m.val_class_samples[c]) + " found (recall " + percent(right, m.val_class_samples[c]) + "), " +
            (predicted == 0 ? "never predicted"
                            : std::to_string(right) + " of " + std::to_string(predicted) + " predictions right (precision " +
                                  percent(right, predicted) + ")");
  }
  return line;
}

std::string oom_line(const memory::OomEvent& e) {
  std::string line =
      "out of memory in " + e.phase + " step " + std::to_string(e.step + 1) + " at micro-batch " + std::to_string(e.old_micro_batch);
  if (e.new_micro_batch == 0) {
    line += ": no smaller micro-batch allowed";
  } else if (e.regrow) {
    line += " (trying the larger size again): back to " + std::to_string(e.new_micro_batch);
  } else {
    line += ": split into micro-batches of " + std::to_string(e.new_micro_batch) + " (same samples, same step)";
  }
  if (e.recovery_seconds >= 0) line += ", step completed " + core::format_fixed(e.recovery_seconds, 2) + " s after the OOM";
  return line + "; " + memory::describe(e.memory);
}

std::string data_stall_advice(double stall_percent, std::int64_t steps, const std::string& cache) {
  constexpr double kNoticeablePercent = 10.0;
  if (steps < 20 || !(stall_percent >= kNoticeablePercent)) return "";
  char share[32];
  std::snprintf(share, sizeof share, "%.0f%%", stall_percent);
  const std::string waited = std::string("the device waited for data ") + share + " of the time (data stall): ";
  if (cache == "none")
    return waited +
           "the loader streams the data; `gputrain profile` with this config measures the fastest data.num_workers, "
           "data.prefetch and data.pin_memory on this machine, and data.cache: vram or ram (when the dataset "
           "fits) takes the loader out of the step";
  if (cache == "ram")
    return waited +
           "batches are copied from RAM each step; data.cache: vram gathers them on the device instead when the "
           "dataset fits (`gputrain profile` shows what fits)";
  return waited +
         "the data is already cached, so gathering and augmenting each batch is what takes the time: a larger "
         "train.batch_size spreads that cost over more samples";
}

}  // namespace gputrain::train
