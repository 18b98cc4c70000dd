#pragma once
// Environment variables as optionals: "unset" and "set but empty" mean different things
// (CUDA_VISIBLE_DEVICES="" hides every GPU; unset shows them all).

#include <optional>
#include <string>

namespace gputrain::core {

/// The variable's value, or nullopt when it is unset.
std::optional<std::string> env(const char* name);

}  // namespace gputrain::core
