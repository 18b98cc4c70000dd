#pragma once
// Logging front: human lines go to stderr through spdlog, which never leaks into public headers
// (its fmt would clash with the fmt LibTorch ships in its include folder).

#include <string>
#include <string_view>

namespace gputrain::core {

/// Severity of a log line, lowest first.
enum class LogLevel { trace, debug, info, warn, error, off };

/// Parses "trace|debug|info|warn|error|off", in any case, and Python's "warning"; throws UsageError
/// naming `source` (the option or variable it came from) and the allowed values otherwise.
LogLevel parse_log_level(std::string_view text, std::string_view source = "--log-level");

/// Sets the level below which lines are dropped (default: info, or GPUTRAIN_LOG_LEVEL when set).
void set_log_level(LogLevel level);

/// Writes one line to stderr at the given level.
void log(LogLevel level, std::string_view message);

/// Shorthands for log(level, message).
inline void log_debug(std::string_view message) { log(LogLevel::debug, message); }
inline void log_info(std::string_view message) { log(LogLevel::info, message); }
inline void log_warn(std::string_view message) { log(LogLevel::warn, message); }
inline void log_error(std::string_view message) { log(LogLevel::error, message); }

}  // namespace gputrain::core
