#include "gputrain/core/stop_signal.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace gputrain::core {
namespace {

std::atomic<int> g_requests{0};

// Async-signal-safe: an atomic, write(2) and _exit(2) only.
void on_signal(int) {
  if (g_requests.fetch_add(1) == 0) {
    static const char message[] = "\ngputrain: stopping after the current step and saving a checkpoint (signal again to quit now)\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, message, sizeof message - 1);
    return;
  }
  static const char message[] = "\ngputrain: second signal, exiting now without a checkpoint\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, message, sizeof message - 1);
  ::_exit(130);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() noexcept { return g_requests.load() > 0; }

void request_stop() noexcept { g_requests.fetch_add(1); }

void clear_stop_request() noexcept { g_requests.store(0); }

}  // namespace gputrain::core
