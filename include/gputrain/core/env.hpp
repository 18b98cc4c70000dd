#pragma once
// Environment variables as optionals: "unset" and "set but empty" mean different things
// (CUDA_VISIBLE_DEVICES="" hides every GPU; unset shows them all).

#include <optional>
#include <string>
#include <vector>

namespace gputrain::core {

/// The variable's value, or nullopt when it is unset.
std::optional<std::string> env(const char* name);

/// A switch's value: nullopt when unset or empty (`VAR= cmd`), else one of `allowed`. Any other
/// value is a UsageError naming the variable, the values it takes and what leaving it unset
/// means (`unset_means`), so that a mistyped switch is never silently the default.
std::optional<std::string> env_choice(const char* name, const std::vector<std::string>& allowed, const std::string& unset_means);

}  // namespace gputrain::core
