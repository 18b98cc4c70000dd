#pragma once
// The UsageError a call throws, as text, for tests that check what a user is told; the test fails
// when the call throws nothing or something else.

#include <gtest/gtest.h>

#include <string>

#include "gputrain/core/error.hpp"

namespace gputrain::test_support {

template <typename F>
std::string usage_error(F&& call) {
  try {
    call();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

/// The fix of the UsageError a call throws.
template <typename F>
std::string usage_fix(F&& call) {
  try {
    call();
  } catch (const UsageError& e) {
    return e.remedy();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

/// The same, with its fix after a newline.
template <typename F>
std::string usage_error_and_fix(F&& call) {
  try {
    call();
  } catch (const UsageError& e) {
    return std::string(e.what()) + "\n" + e.remedy();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

}  // namespace gputrain::test_support
