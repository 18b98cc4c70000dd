#include "gputrain/core/env.hpp"

#include <cstdlib>

namespace gputrain::core {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace gputrain::core
