#include "gputrain/core/env.hpp"

#include <algorithm>
#include <cstdlib>

#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"

namespace gputrain::core {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<std::string> env_choice(const char* name, const std::vector<std::string>& allowed, const std::string& unset_means) {
  auto value = env(name);
  if (!value || value->empty()) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *value) != allowed.end()) return value;
  std::string choices;
  for (const auto& choice : allowed) choices += (choices.empty() ? "" : ", ") + choice;
  const auto likely = likely_choices(*value, allowed);
  throw UsageError(
      std::string(name) + "=" + *value + " is not a value it takes (" + choices + "; unset: " + unset_means + ")" +
          (likely.empty() ? "" : "; did you mean '" + likely.front() + "'?"),
      "set " + std::string(name) + "=" + (likely.empty() ? allowed.front() : likely.front()) + ", or unset it (unset " + name + ")");
}

}  // namespace gputrain::core
