// The console: a progress bar redrawn in place on a terminal, or plain lines for logs and CI; and
// a watch that says so when a step (or a validation, a checkpoint) runs long without a line.
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include "gputrain/core/printable.hpp"
#include "gputrain/core/terminal.hpp"
#include "gputrain/train/metrics.hpp"
#include "human_lines.hpp"

namespace gputrain::train {
namespace {

using Clock = std::chrono::steady_clock;

class ConsoleSink final : public MetricSink {
 public:
  ConsoleSink(bool bar, std::ostream& out, std::chrono::milliseconds quiet, std::function<int()> columns)
      : bar_(bar), out_(out), quiet_(quiet), columns_(std::move(columns)) {
    // Another stream than stderr (a test's, a host program's) has no width to ask: the full bar.
    if (!columns_) columns_ = [this] { return &out_ == &std::cerr ? core::terminal_columns(STDERR_FILENO) : kFullWidth; };
  }
  ~ConsoleSink() override { stop_watch(); }

  void on_start(const RunInfo& info) override {
    std::lock_guard<std::mutex> lock(mutex_);
    info_ = info;
    out_ << header_line(info) << "\n";
  }
  void on_step(const StepMetrics& m) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!bar_) {
      out_ << step_line(m, info_.total_steps) << "\n";
      return;
    }
    out_ << "\r";
    draw_bar_locked(m);
  }
  void on_epoch(const EpochMetrics& m) override { print(epoch_line(m, info_.epochs, info_.show_balanced_accuracy)); }
  void on_oom(const memory::OomEvent& e) override { print(oom_line(e)); }
  void on_note(const std::string& note) override { print(note); }
  void on_work(const std::string& what) override {
    if (quiet_.count() <= 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    work_ = what;
    work_start_ = Clock::now();
    next_say_ = quiet_;
    // Started by the first work, so a sink that is only written to (evaluation's) has no thread.
    if (!watch_.joinable()) watch_ = std::thread([this] { watch(); });
  }
  void on_end() override {
    stop_watch();
    std::lock_guard<std::mutex> lock(mutex_);
    if (bar_drawn_) out_ << "\n";
    bar_drawn_ = false;
  }

 private:
  // A line of its own, leaving the bar to be redrawn below it.
  void print(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    print_locked(line);
  }
  void print_locked(const std::string& line) {
    if (bar_drawn_) out_ << "\r\x1b[K";
    out_ << core::printable(line) << "\n" << std::flush;  // a name from data moves no cursor
    bar_drawn_ = false;
  }

  // Fitted to the terminal's width now: a narrower pane gets a shorter bar, not a new line per redraw.
  void draw_bar_locked(const StepMetrics& m) {
    const auto bar = bar_line(m, info_.total_steps, info_.epochs, columns_());
    out_ << bar << "\x1b[K" << std::flush;
    last_bar_ = m;
    bar_width_ = static_cast<int>(std::count_if(bar.begin(), bar.end(), [](char c) { return (c & 0xC0) != 0x80; }));  // UTF-8 characters
    resizes_seen_ = core::terminal_resizes();
    bar_drawn_ = true;
  }
  // After a resize: a bar wider than the terminal now wraps over several rows (terminals reflow
  // it), so the cursor goes up to its first row, clears from there, and the bar is drawn to fit.
  void redraw_after_resize_locked() {
    const int columns = std::max(1, columns_());
    const int rows_up = bar_width_ > columns ? (bar_width_ - 1) / columns : 0;
    if (rows_up > 0) out_ << "\x1b[" << rows_up << "A";
    out_ << "\r\x1b[J";
    draw_bar_locked(last_bar_);
  }

  // Looks a few times per `quiet` (at most once a second) whether the work has run past its next
  // mark; the marks double, so a step of an hour says so about seven times, not a hundred. And
  // whether the terminal was resized under a drawn bar (SIGWINCH): it is redrawn to fit.
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto tick = std::clamp<std::chrono::milliseconds>(quiet_ / 4, std::chrono::milliseconds(1), std::chrono::seconds(1));
    while (!wake_.wait_for(lock, tick, [&] { return stopping_; })) {
      if (bar_ && bar_drawn_ && core::terminal_resizes() != resizes_seen_) redraw_after_resize_locked();
      const auto ran = Clock::now() - work_start_;
      if (work_.empty() || ran < next_say_) continue;
      print_locked(work_ + " still running: " + format_duration(std::chrono::duration<double>(ran).count()) + " so far");
      while (next_say_ <= ran) next_say_ *= 2;
    }
  }
  void stop_watch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      work_.clear();
    }
    wake_.notify_all();
    if (watch_.joinable()) watch_.join();
    stopping_ = false;  // a sink's run may start again (the trainer's fit() once more)
  }

  bool bar_;
  static constexpr int kFullWidth = 120;
  std::ostream& out_;
  const std::chrono::milliseconds quiet_;
  RunInfo info_;
  bool bar_drawn_ = false;
  std::function<int()> columns_;
  StepMetrics last_bar_;
  int bar_width_ = 0;
  std::uint64_t resizes_seen_ = 0;
  std::mutex mutex_;  // the watch prints from its own thread
  std::condition_variable wake_;
  std::thread watch_;
  bool stopping_ = false;
  std::string work_;
  Clock::time_point work_start_;
  Clock::duration next_say_{};
};

}  // namespace

std::unique_ptr<MetricSink> make_console_sink(const std::string& mode, std::ostream& out, std::chrono::milliseconds quiet,
                                              std::function<int()> columns) {
  if (mode == "off") return std::make_unique<MetricSink>();
  return std::make_unique<ConsoleSink>(mode == "bar", out, quiet, std::move(columns));
}

}  // namespace gputrain::train
