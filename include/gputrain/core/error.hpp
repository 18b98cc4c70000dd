#pragma once
// gputrain::Error: what went wrong in the user's terms, how to fix it, and the exit code it maps to.

#include <stdexcept>
#include <string>

namespace gputrain {

/// Process exit codes shared by every command (see DESIGN.md, "Conventions").
enum class ExitCode : int {
  ok = 0,            ///< success
  failure = 1,       ///< a check or the run failed
  usage = 2,         ///< bad usage, invalid config or input
  environment = 3,   ///< the environment is unusable (e.g. GPU required but absent)
  interrupted = 130  ///< stopped by a signal after a clean checkpoint
};

/// An error a user can act on: a message, a concrete remedy and the exit code it ends with.
class Error : public std::runtime_error {
 public:
  Error(const std::string& message, std::string remedy, ExitCode code = ExitCode::failure);

  /// The fix to try: a command or a setting. May be empty when there is nothing to suggest.
  const std::string& remedy() const noexcept { return remedy_; }
  /// The exit code a command ends with when this error reaches it.
  ExitCode exit_code() const noexcept { return code_; }

 private:
  std::string remedy_;
  ExitCode code_;
};

/// Bad flags, an invalid value or unreadable input: exit code 2.
class UsageError : public Error {
 public:
  UsageError(const std::string& message, std::string remedy);
};

/// The machine cannot do what was asked (no GPU, no driver): exit code 3.
class EnvironmentError : public Error {
 public:
  EnvironmentError(const std::string& message, std::string remedy);
};

}  // namespace gputrain
