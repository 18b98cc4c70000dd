// core::env_choice (include/gputrain/core/env.hpp): a switch set to a value it does not take is
// refused, never silently read as unset.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "gputrain/core/env.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;

namespace {

constexpr const char* kName = "GPUTRAIN_TEST_SWITCH";

struct EnvChoice : ::testing::Test {
  void TearDown() override { unsetenv(kName); }
  static std::optional<std::string> read() { return core::env_choice(kName, {"aten", "per-layer"}, "the default"); }
};

TEST_F(EnvChoice, UnsetOrEmptyIsNoneAndAnAllowedValueIsItself) {
  EXPECT_EQ(read(), std::nullopt);
  setenv(kName, "", 1);
  EXPECT_EQ(read(), std::nullopt);
  setenv(kName, "per-layer", 1);
  EXPECT_EQ(read(), "per-layer");
}

TEST_F(EnvChoice, AnotherValueIsAUsageErrorThatNamesTheValuesAndTheLikelyOne) {
  setenv(kName, "Aten", 1);
  EXPECT_EQ(test_support::usage_error(read),
            "GPUTRAIN_TEST_SWITCH=Aten is not a value it takes (aten, per-layer; unset: the default); did you mean 'aten'?");
  EXPECT_EQ(test_support::usage_fix(read), "set GPUTRAIN_TEST_SWITCH=aten, or unset it (unset GPUTRAIN_TEST_SWITCH)");
  setenv(kName, "1", 1);
  EXPECT_EQ(test_support::usage_error(read), "GPUTRAIN_TEST_SWITCH=1 is not a value it takes (aten, per-layer; unset: the default)");
  EXPECT_EQ(test_support::usage_fix(read), "set GPUTRAIN_TEST_SWITCH=aten, or unset it (unset GPUTRAIN_TEST_SWITCH)");
}

}  // namespace
