#include <gtest/gtest.h>

#include <thread>

#include "gputrain/checks/runner.hpp"
#include "gputrain/core/error.hpp"

using namespace gputrain;
using namespace gputrain::checks;

TEST(Runner, RunsChecksInOrderAndReportsEachAsItFinishes) {
  std::vector<std::string> seen;
  const std::vector<Check> checks{
      {"a.one", "a", "first", std::chrono::seconds(2), [](const Context&) { return pass("fine"); }},
      {"a.two", "a", "second", std::chrono::seconds(2), [](const Context&) { return warn("meh", "do x"); }},
  };
  const auto outcomes = run_checks(checks, std::make_shared<Context>(), [&](const Outcome& o) { seen.push_back(o.id); });
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(seen, (std::vector<std::string>{"a.one", "a.two"}));
  EXPECT_EQ(outcomes[1].result.status, Status::warn);
  EXPECT_EQ(outcomes[1].result.remedy, "do x");
}

TEST(Runner, AHungCheckBecomesATimeoutAndTheRunGoesOn) {
  const std::vector<Check> checks{
      {"slow", "x", "hangs", std::chrono::milliseconds(100),
       [](const Context&) {
         std::this_thread::sleep_for(std::chrono::seconds(2));
         return pass("too late");
       }},
      {"next", "x", "after", std::chrono::seconds(2), [](const Context&) { return pass("ran"); }},
  };
  const auto started = std::chrono::steady_clock::now();
  const auto outcomes = run_checks(checks, std::make_shared<Context>());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  EXPECT_EQ(outcomes[0].result.status, Status::timeout);
  EXPECT_FALSE(outcomes[0].result.remedy.empty());
  EXPECT_EQ(outcomes[1].result.status, Status::pass);
  EXPECT_TRUE(work_was_abandoned());
}

TEST(Runner, ExceptionsBecomeFailuresWithTheirRemedy) {
  const std::vector<Check> checks{
      {"err", "x", "throws gputrain::Error", std::chrono::seconds(2), [](const Context&) -> Result { throw Error("broken", "fix it"); }},
      {"std", "x", "throws std::exception", std::chrono::seconds(2), [](const Context&) -> Result { throw std::runtime_error("boom"); }},
  };
  const auto outcomes = run_checks(checks, std::make_shared<Context>());
  EXPECT_EQ(outcomes[0].result.status, Status::fail);
  EXPECT_EQ(outcomes[0].result.detail, "broken");
  EXPECT_EQ(outcomes[0].result.remedy, "fix it");
  EXPECT_EQ(outcomes[1].result.status, Status::fail);
  EXPECT_NE(outcomes[1].result.detail.find("boom"), std::string::npos);
}

TEST(RunBounded, ReturnsTheValueWhenInTime) {
  const auto value = run_bounded([] { return 42; }, std::chrono::seconds(1));
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, 42);
}
