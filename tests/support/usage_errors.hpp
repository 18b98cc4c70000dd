#pragma once
// The UsageError a call throws, as text, for tests that check what a user is told; the test fails
// when the call throws nothing or something else.

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "gputrain/core/error.hpp"

namespace gputrain::test_support {

/// The UsageError `call` throws; a test failure and nullopt when it throws none.
template <typename F>
std::optional<UsageError> thrown_usage_error(F&& call) {
  try {
    call();
  } catch (const UsageError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a UsageError";
  return std::nullopt;
}

/// Its message.
template <typename F>
std::string usage_error(F&& call) {
  const auto error = thrown_usage_error(call);
  return error ? error->what() : "";
}

/// Its fix.
template <typename F>
std::string usage_fix(F&& call) {
  const auto error = thrown_usage_error(call);
  return error ? error->remedy() : "";
}

/// The message, with its fix after a newline.
template <typename F>
std::string usage_error_and_fix(F&& call) {
  const auto error = thrown_usage_error(call);
  return error ? std::string(error->what()) + "\n" + error->remedy() : "";
}

}  // namespace gputrain::test_support
