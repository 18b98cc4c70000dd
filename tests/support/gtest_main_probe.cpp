// Suites with known outcomes for tests/support/check_gtest_main.cmake, which checks the exit
// status the tests' main gives each (never run as tests themselves).
#include <gtest/gtest.h>

TEST(EverySkipped, One) { GTEST_SKIP() << "skipped on purpose"; }
TEST(EverySkipped, Two) { GTEST_SKIP() << "skipped on purpose"; }
TEST(SomeSkipped, Passes) { EXPECT_EQ(1 + 1, 2); }
TEST(SomeSkipped, Skips) { GTEST_SKIP() << "skipped on purpose"; }
TEST(OneFails, Skips) { GTEST_SKIP() << "skipped on purpose"; }
TEST(OneFails, Fails) { ADD_FAILURE() << "failed on purpose"; }
