// What the console says when a step, a validation or a checkpoint runs long without a line: a
// ResNet-50 step on a CPU takes minutes, and a run that says nothing for them looks hung.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <sstream>
#include <string>
#include <thread>

#include "gputrain/train/metrics.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/run_info.hpp"
#include "support/small_run.hpp"

using namespace gputrain;
using namespace gputrain::train;
using namespace std::chrono_literals;
using gputrain::test_support::small_run_info;

namespace {

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

}  // namespace

// Said at the quiet time and again at each doubling of it (20, 40, 80, 160 ms here), not at every
// look the watch takes; on_end stops the watch.
TEST(StillRunning, WorkThatRunsLongIsSaidAtEachDoublingOfTheQuietTime) {
  std::ostringstream out;
  auto sink = make_console_sink("lines", out, 20ms);
  sink->on_start(small_run_info());
  const auto start = std::chrono::steady_clock::now();
  sink->on_work("step 3 of 100");
  std::this_thread::sleep_for(300ms);
  sink->on_end();
  const double ran_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const auto text = out.str();
  const int said = count(text, "step 3 of 100 still running: 0:00 so far\n");
  EXPECT_GE(said, 1) << text;
  // Marks at 20 ms x 1, 2, 4, ...: one line each, however late this thread woke (a line per look
  // would be one every 5 ms).
  EXPECT_LE(said, static_cast<int>(std::floor(std::log2(ran_ms / 20.0))) + 1) << "ran " << ran_ms << " ms\n" << text;
}

// Work that ends within the quiet time says nothing; the next work starts the count again, and a
// line over the bar clears it first.
TEST(StillRunning, WorkThatEndsInTimeSaysNothingAndTheBarIsClearedFirst) {
  std::ostringstream quick;
  auto sink = make_console_sink("lines", quick, 10s);
  sink->on_start(small_run_info());
  sink->on_work("validation after epoch 1");
  sink->on_work("step 51 of 100");
  sink->on_end();
  EXPECT_EQ(quick.str().find("still running"), std::string::npos) << quick.str();

  std::ostringstream bar;
  auto bar_sink = make_console_sink("bar", bar, 20ms);
  bar_sink->on_start(small_run_info());
  StepMetrics m;
  m.step = 50;
  bar_sink->on_step(m);
  bar_sink->on_work("writing the checkpoint of step 50");
  std::this_thread::sleep_for(100ms);
  bar_sink->on_end();
  EXPECT_NE(bar.str().find("\r\x1b[Kwriting the checkpoint of step 50 still running"), std::string::npos) << bar.str();
}

// A resized terminal (SIGWINCH) gets the bar redrawn to its new width while a step runs: the cursor
// goes up over the rows the wider bar now wraps to, clears from there, and a bar that fits is drawn.
TEST(StillRunning, AResizedTerminalGetsTheBarRedrawnToFit) {
  const auto width_of = [](const std::string& text) {
    return static_cast<int>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
  };
  std::atomic<int> columns{120};
  std::ostringstream out;
  auto sink = make_console_sink("bar", out, 40ms, [&columns] { return columns.load(); });
  sink->on_start(small_run_info());
  StepMetrics m;
  m.step = 50;
  m.loss = 1.2345;
  m.samples_per_second = 12345;
  sink->on_step(m);
  sink->on_work("step 51 of 100");
  columns = 30;
  std::raise(SIGWINCH);
  std::this_thread::sleep_for(500ms);  // the watch looks every 10 ms
  sink->on_end();
  const auto text = out.str();
  const auto first_start = text.find('\r') + 1, first_end = text.find("\x1b[K", first_start);
  ASSERT_NE(first_end, std::string::npos) << text;
  const int first_width = width_of(text.substr(first_start, first_end - first_start));
  ASSERT_GT(first_width, 30) << "the bar at 120 columns";
  const std::string up = "\x1b[" + std::to_string((first_width - 1) / 30) + "A\r\x1b[J";
  const auto redraw = text.find(up, first_end);
  ASSERT_NE(redraw, std::string::npos) << "no redraw after the resize in: " << text;
  const auto bar_start = redraw + up.size(), bar_end = text.find("\x1b[K", bar_start);
  ASSERT_NE(bar_end, std::string::npos);
  EXPECT_LE(width_of(text.substr(bar_start, bar_end - bar_start)), 30) << text.substr(bar_start, bar_end - bar_start);
  EXPECT_EQ(count(text, "\x1b[J"), 1) << "one resize, one redraw";
}

// The trainer names each step as it starts it: a slow one is said to be still running, by number.
TEST(StillRunning, ASlowTrainingStepIsNamedWhileItRuns) {
  auto options = test_support::quiet_trainer();
  std::ostringstream console;
  options.console = &console;
  options.console_quiet = 50ms;
  int batches = 0;
  options.on_batch = [&](const data::Batch&) {
    if (++batches == 2) std::this_thread::sleep_for(300ms);
  };
  auto config = test_support::small_run("still-running", {"logging.progress=lines", "train.epochs=1"});
  Trainer trainer(config, options);
  trainer.fit();
  EXPECT_NE(console.str().find("step 2 of 6 still running: 0:00 so far"), std::string::npos) << console.str();
}
