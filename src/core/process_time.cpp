#include "gputrain/core/process_time.hpp"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>

namespace gputrain::core {
namespace {

// The process's start in seconds after boot: field 22 of /proc/self/stat, counted after the
// command name's closing parenthesis (a name may hold spaces and parentheses itself).
std::optional<double> start_after_boot() {
  std::ifstream file("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int number = 3; number <= 22 && fields >> field; ++number)
    if (number == 22) {
      const long ticks = ::sysconf(_SC_CLK_TCK);
      if (ticks <= 0) return std::nullopt;
      try {
        return std::stod(field) / static_cast<double>(ticks);
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  return std::nullopt;
}

}  // namespace

double seconds_since_process_start() {
  static const auto first_call = std::chrono::steady_clock::now();
  static const std::optional<double> started = start_after_boot();
  timespec now{};
  if (started && ::clock_gettime(CLOCK_BOOTTIME, &now) == 0) {
    const double seconds = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9 - *started;
    if (seconds >= 0) return seconds;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - first_call).count();
}

}  // namespace gputrain::core
