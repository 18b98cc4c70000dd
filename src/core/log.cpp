// The only file that includes spdlog. It is compiled without LibTorch's include folder (see
// src/CMakeLists.txt), so <fmt/...> resolves to the fmt that Debian's spdlog was built with.
#include "gputrain/core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/suggest.hpp"

namespace gputrain::core {
namespace {

constexpr std::array<std::string_view, 6> kLevelNames = {"trace", "debug", "info", "warn", "error", "off"};

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::trace:
      return spdlog::level::trace;
    case LogLevel::debug:
      return spdlog::level::debug;
    case LogLevel::info:
      return spdlog::level::info;
    case LogLevel::warn:
      return spdlog::level::warn;
    case LogLevel::error:
      return spdlog::level::err;
    case LogLevel::off:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = [] {
    auto made = spdlog::stderr_color_mt("gputrain");
    made->set_pattern("%^%l%$: %v");
    LogLevel level = LogLevel::info;
    if (const char* env = std::getenv("GPUTRAIN_LOG_LEVEL")) {
      try {
        level = parse_log_level(env);
      } catch (const Error&) {
        // A bad level in the environment must not stop a command: keep the default.
      }
    }
    made->set_level(to_spdlog(level));
    return made;
  }();
  return *instance;
}

}  // namespace

LogLevel parse_log_level(std::string_view text, std::string_view source) {
  // Python's names are in capitals, and call warn "warning": both are taken as they mean.
  std::string word(text);
  std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
  if (word == "warning") word = "warn";
  for (std::size_t i = 0; i < kLevelNames.size(); ++i) {
    if (word == kLevelNames[i]) return static_cast<LogLevel>(i);
  }
  std::string fix = "use one of: trace, debug, info, warn, error, off";
  const auto likely = likely_choices(word, std::vector<std::string>(kLevelNames.begin(), kLevelNames.end()));
  if (likely.size() == 1) fix = "did you mean " + likely.front() + "? " + fix;
  throw UsageError(std::string(source) + " is '" + std::string(text) + "', which is not a log level", fix);
}

void set_log_level(LogLevel level) { logger().set_level(to_spdlog(level)); }

// Warnings quote names from data: printed as escapes, never acted on by the terminal.
void log(LogLevel level, std::string_view message) { logger().log(to_spdlog(level), "{}", printable(message)); }

}  // namespace gputrain::core
