#include "gputrain/core/terminal.hpp"

#include <sys/ioctl.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <mutex>

namespace gputrain::core {
namespace {

bool set_on(const EnvLookup& lookup, const char* name) {
  const auto value = lookup(name);
  return value && !value->empty() && *value != "0";
}

std::atomic<std::uint64_t> resizes{0};
struct sigaction previous_winch {};

void on_winch(int signal) {
  resizes.fetch_add(1, std::memory_order_relaxed);
  const int interrupted_errno = errno;  // the handler before ours may set it
  if (previous_winch.sa_handler != SIG_DFL && previous_winch.sa_handler != SIG_IGN && !(previous_winch.sa_flags & SA_SIGINFO))
    previous_winch.sa_handler(signal);
  errno = interrupted_errno;
}

}  // namespace

std::uint64_t terminal_resizes() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction action {};
    action.sa_handler = on_winch;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // a read or write the resize interrupts goes on
    sigaction(SIGWINCH, &action, &previous_winch);
  });
  return resizes.load(std::memory_order_relaxed);
}

int terminal_columns(int fd, const EnvLookup& lookup) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const auto columns = lookup("COLUMNS")) {
    char* end = nullptr;
    const long value = std::strtol(columns->c_str(), &end, 10);
    if (end != columns->c_str() && *end == '\0' && value > 0 && value < 10000) return static_cast<int>(value);
  }
  return 80;
}

bool color_wanted(bool terminal, bool no_color, const EnvLookup& lookup) {
  if (no_color) return false;
  if (set_on(lookup, "FORCE_COLOR") || set_on(lookup, "CLICOLOR_FORCE")) return true;
  if (lookup("TERM").value_or("") == "dumb") return false;
  return terminal;
}

}  // namespace gputrain::core
