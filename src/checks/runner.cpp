#include "gputrain/checks/runner.hpp"

#include <atomic>
#include <exception>

#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::checks {
namespace {
std::atomic<bool> g_abandoned{false};
}  // namespace

bool work_was_abandoned() { return g_abandoned.load(); }
void mark_abandoned() { g_abandoned.store(true); }

std::vector<Outcome> run_checks(const std::vector<Check>& checks, const std::shared_ptr<const Context>& context,
                                const std::function<void(const Outcome&)>& on_outcome) {
  std::vector<Outcome> outcomes;
  for (const auto& check : checks) {
    const auto started = std::chrono::steady_clock::now();
    // The check is copied into the task: if it is abandoned, it must not refer to our stack.
    auto bounded = run_bounded(
        [check, context]() -> Result {
          try {
            return check.run(*context);
          } catch (const Error& error) {
            return fail(error.what(), error.remedy());
          } catch (const std::exception& error) {
            return fail("unexpected error: " + core::without_backtrace(error.what()),
                        "run again with GPUTRAIN_LOG_LEVEL=debug and report it with `gputrain --version`");
          }
        },
        check.time_limit);
    Outcome outcome{check.id, check.area, check.title, {}, 0};
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (bounded) {
      outcome.result = std::move(*bounded);
    } else {
      outcome.result = {Status::timeout,
                        "no answer within " + core::format_fixed(check.time_limit.count() / 1000.0, 1) + " s",
                        !check.timeout_remedy.empty() ? check.timeout_remedy
                                                      : "the driver or device may be hung: check `dmesg | grep -i -E 'nvrm|xid'`, then "
                                                        "reset the GPU (`nvidia-smi -r -i <index>`) or reboot",
                        {}};
    }
    if (on_outcome) on_outcome(outcome);
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

}  // namespace gputrain::checks
