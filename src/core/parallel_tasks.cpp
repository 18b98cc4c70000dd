#include "gputrain/core/parallel_tasks.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gputrain::core {

void parallel_tasks(std::int64_t count, int threads, const std::function<void(std::int64_t)>& task) {
  std::atomic<std::int64_t> next{0};
  std::mutex mutex;
  std::int64_t failed_at = count;
  std::exception_ptr failure;
  const auto work = [&] {
    for (std::int64_t i = next++; i < count; i = next++) {
      try {
        task(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (i < failed_at) failed_at = i, failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  const std::int64_t wanted = std::min<std::int64_t>(std::max(1, threads), count) - 1;
  for (std::int64_t h = 0; h < wanted; ++h) helpers.emplace_back(work);
  work();
  for (auto& helper : helpers) helper.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace gputrain::core
