// The console: a progress bar redrawn in place on a terminal, or plain lines for logs and CI.
#include <algorithm>

#include "gputrain/train/metrics.hpp"
#include "human_lines.hpp"

namespace gputrain::train {
namespace {

class ConsoleSink final : public MetricSink {
 public:
  ConsoleSink(bool bar, std::ostream& out) : bar_(bar), out_(out) {}
  void on_start(const RunInfo& info) override {
    info_ = info;
    out_ << header_line(info) << "\n";
  }
  void on_step(const StepMetrics& m) override {
    if (!bar_) {
      out_ << step_line(m, info_.total_steps) << "\n";
      return;
    }
    // epoch 1/3 [##########----------] 120/500 loss 0.4231 1234 samples/s data 3% ETA 0:42
    constexpr int kWidth = 24;
    const double done = info_.total_steps > 0 ? double(m.step) / double(info_.total_steps) : 0.0;
    const int filled = std::clamp(static_cast<int>(done * kWidth), 0, kWidth);
    char line[256];
    std::snprintf(line, sizeof line, "\repoch %lld/%lld [%s%s] %lld/%lld loss %.4f %.0f samples/s data %.0f%% ETA %s\x1b[K",
                  static_cast<long long>(m.epoch + 1), static_cast<long long>(info_.epochs),
                  std::string(static_cast<std::size_t>(filled), '#').c_str(),
                  std::string(static_cast<std::size_t>(kWidth - filled), '-').c_str(), static_cast<long long>(m.step),
                  static_cast<long long>(info_.total_steps), m.loss, m.samples_per_second, m.data_stall_percent(),
                  format_duration(m.eta_seconds).c_str());
    out_ << line << std::flush;
    bar_drawn_ = true;
  }
  void on_epoch(const EpochMetrics& m) override { print(epoch_line(m, info_.epochs, info_.show_balanced_accuracy)); }
  void on_oom(const memory::OomEvent& e) override { print(oom_line(e)); }
  void on_note(const std::string& note) override { print(note); }
  void on_end() override {
    if (bar_drawn_) out_ << "\n";
    bar_drawn_ = false;
  }

 private:
  // A line of its own, leaving the bar to be redrawn below it.
  void print(const std::string& line) {
    if (bar_drawn_) out_ << "\r\x1b[K";
    out_ << line << "\n" << std::flush;
    bar_drawn_ = false;
  }
  bool bar_;
  std::ostream& out_;
  RunInfo info_;
  bool bar_drawn_ = false;
};

}  // namespace

std::unique_ptr<MetricSink> make_console_sink(const std::string& mode, std::ostream& out) {
  if (mode == "off") return std::make_unique<MetricSink>();
  return std::make_unique<ConsoleSink>(mode == "bar", out);
}

}  // namespace gputrain::train
