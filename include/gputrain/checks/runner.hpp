#pragma once
// Runs checks so that none can hang the run: each runs on its own thread, and one that overruns
// its time limit is reported as `timeout` and left behind (a hung driver call cannot be cancelled).

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gputrain/checks/check.hpp"

namespace gputrain::checks {

/// A check and what it returned, with its wall time.
struct Outcome {
  std::string id, area, title;
  Result result;
  double seconds = 0;
};

/// Runs `checks` in order against `context`, calling `on_outcome` after each (for live output).
std::vector<Outcome> run_checks(const std::vector<Check>& checks, const std::shared_ptr<const Context>& context,
                                const std::function<void(const Outcome&)>& on_outcome = {});

/// True once a check or bounded call has been left running past its limit. A command must then
/// end with std::_Exit: normal exit would tear down state the abandoned thread may still use.
bool work_was_abandoned();

/// Records that a thread was left behind (used by run_bounded).
void mark_abandoned();

/// Runs fn on a thread and waits at most `limit`; nullopt means it overran and was abandoned.
template <typename Fn>
auto run_bounded(Fn fn, std::chrono::milliseconds limit) -> std::optional<decltype(fn())> {
  using T = decltype(fn());
  auto task = std::make_shared<std::packaged_task<T()>>(std::move(fn));
  auto future = task->get_future();
  std::thread worker([task] { (*task)(); });
  if (future.wait_for(limit) != std::future_status::ready) {
    worker.detach();
    mark_abandoned();
    return std::nullopt;
  }
  worker.join();
  return future.get();
}

}  // namespace gputrain::checks
