#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gputrain/core/process_time.hpp"

using gputrain::core::seconds_since_process_start;

namespace {
// Set while the test program starts, before main(): the process started earlier still.
const auto program_loaded = std::chrono::steady_clock::now();
}  // namespace

// The time since the process started, not since the first call: this test's process has run a
// little already (its libraries mapped, gtest set up), and the figure keeps pace with the clock.
TEST(ProcessTime, CountsFromTheProcessStartAtTheClocksPace) {
  const double since_loaded = std::chrono::duration<double>(std::chrono::steady_clock::now() - program_loaded).count();
  const double first = seconds_since_process_start();
  EXPECT_GE(first, since_loaded) << "counted from the first call, not from the process start";
  EXPECT_LT(first, 600.0) << "a test process younger than ten minutes";
  const auto before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  const double second = seconds_since_process_start();
  EXPECT_NEAR(second - first, elapsed, 0.02);
}
