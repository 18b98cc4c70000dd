#include "gputrain/core/stop_signal.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <ctime>

namespace gputrain::core {
namespace {

std::atomic<int> g_requests{0};
std::atomic<std::int64_t> g_first_signal_ns{0};

// One event can deliver the same signal twice: GNU `timeout` signals the command and then its
// whole process group, and a terminal's Ctrl-C reaches a process a wrapper also forwards it to.
// A repeat this soon after the first is that echo, not a person asking a second time.
constexpr std::int64_t kEchoNs = 100'000'000;

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe (POSIX)
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// Async-signal-safe: atomics, clock_gettime(2), write(2) and _exit(2) only.
void announce_or_exit() {
  const std::int64_t now = monotonic_ns();
  if (g_requests.fetch_add(1) == 0) {
    g_first_signal_ns.store(now);
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, kStopAnnouncement, sizeof kStopAnnouncement - 1);
    return;
  }
  if (now - g_first_signal_ns.load() < kEchoNs) return;
  static const char message[] = "\ngputrain: second signal, exiting now without a checkpoint\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, message, sizeof message - 1);
  ::_exit(130);
}

// The interrupted code may be between a failed call and its read of errno, which the write
// would overwrite (EPIPE with the console gone): errno is put back as it was.
void on_signal(int) {
  const int interrupted_errno = errno;
  announce_or_exit();
  errno = interrupted_errno;
}

}  // namespace

std::vector<SavedAction> catch_stop_signals(void (*handler)(int), int flags) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = flags;
  std::vector<SavedAction> saved;
  for (const int sig : kStopSignals) {
    SavedAction before{sig, {}};
    sigaction(sig, nullptr, &before.action);
    saved.push_back(before);
    // Under nohup a closed terminal is meant to leave the run going, and whoever ignored SIGUSR1
    // for this process chose the same for it; SIGINT and SIGTERM always stop a run.
    if (sig != SIGINT && sig != SIGTERM && before.action.sa_handler == SIG_IGN) continue;
    sigaction(sig, &action, nullptr);
  }
  // With the console gone (a closed terminal, `| tee` that exited), a write fails with EPIPE
  // instead of killing the process before it has saved its checkpoint.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  SavedAction pipe{SIGPIPE, {}};
  sigaction(SIGPIPE, &ignore, &pipe.action);
  saved.push_back(pipe);
  return saved;
}

void restore_actions(const std::vector<SavedAction>& saved) {
  for (const auto& [sig, action] : saved) sigaction(sig, &action, nullptr);
}

void install_stop_handlers() { catch_stop_signals(on_signal, SA_RESTART); }

bool stop_requested() noexcept { return g_requests.load() > 0; }

void request_stop() noexcept { g_requests.fetch_add(1); }

void clear_stop_request() noexcept { g_requests.store(0); }

}  // namespace gputrain::core
