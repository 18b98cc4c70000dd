// core::parallel_tasks: every task once, on as many threads as asked, the first failure by index
// rethrown after the rest have run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "gputrain/core/parallel_tasks.hpp"

using gputrain::core::parallel_tasks;

TEST(ParallelTasks, EveryTaskRunsOnce) {
  for (const int threads : {0, 1, 2, 7})
    for (const std::int64_t count : {0, 1, 5, 100}) {
      std::vector<std::atomic<int>> runs(static_cast<std::size_t>(count));
      parallel_tasks(count, threads, [&](std::int64_t i) { ++runs[static_cast<std::size_t>(i)]; });
      for (std::int64_t i = 0; i < count; ++i)
        EXPECT_EQ(runs[static_cast<std::size_t>(i)].load(), 1) << count << " tasks, " << threads << " threads";
    }
}

// Three tasks that each wait until all three have started finish only if three threads run them at
// once (a serial run would time out, and fail, rather than hang).
TEST(ParallelTasks, TheTasksRunAtOnceOnTheThreadsAsked) {
  std::mutex mutex;
  std::condition_variable all_started;
  int started = 0;
  std::atomic<int> met{0};
  parallel_tasks(3, 3, [&](std::int64_t) {
    std::unique_lock<std::mutex> lock(mutex);
    ++started;
    all_started.notify_all();
    if (all_started.wait_for(lock, std::chrono::seconds(20), [&] { return started == 3; })) ++met;
  });
  EXPECT_EQ(met.load(), 3);
}

TEST(ParallelTasks, TheFirstFailureByIndexIsRethrownAfterTheRestRan) {
  std::atomic<int> ran{0};
  try {
    parallel_tasks(50, 4, [&](std::int64_t i) {
      ++ran;
      if (i == 7 || i == 30) throw std::runtime_error("task " + std::to_string(i));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task 7");
  }
  EXPECT_EQ(ran.load(), 50);
}
