// Long set-up work (a CSV's parse, a large synthetic set, the cache's fill) says how far it is at
// most every few seconds, rank 0 alone, and any rank stops on a stop request.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "train/setup/setup_progress.hpp"  // private

using namespace gputrain;
using namespace std::chrono_literals;

TEST(SetupProgress, SaysHowFarAtMostEveryIntervalAndRankZeroAlone) {
  std::ostringstream out;
  train::SetupProgress progress(out, /*speaks=*/true, 50ms);
  int amounts_made = 0;
  const auto amounts = [&] { return std::to_string(++amounts_made) + " of 4 parts"; };
  progress("reading data.csv", 1, 4, amounts);
  EXPECT_EQ(out.str(), "") << "nothing said before the first interval";
  std::this_thread::sleep_for(60ms);
  progress("reading data.csv", 3, 4, amounts);
  progress("reading data.csv", 4, 4, amounts);
  EXPECT_EQ(out.str(), "reading data.csv: 75 % (1 of 4 parts)\n");
  EXPECT_EQ(amounts_made, 1) << "amounts are made only when said";

  std::ostringstream other_rank;
  train::SetupProgress quiet(other_rank, /*speaks=*/false, 0ms);
  quiet("generating the synthetic training set", 5, 10, [] { return std::string("5 of 10 samples"); });
  EXPECT_EQ(other_rank.str(), "");
}

TEST(SetupProgress, AStopEndsTheWorkWithExit130OnEveryRank) {
  for (const bool speaks : {true, false}) {
    std::ostringstream out;
    train::SetupProgress progress(out, speaks, 1h);
    core::request_stop();
    try {
      progress("generating the synthetic training set", 7437, 12800, [] { return std::string("7437 of 12800 samples"); });
      ADD_FAILURE() << "a stop went unheard";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), ExitCode::interrupted);
      EXPECT_EQ(
          std::string(e.what()),
          "interrupted while generating the synthetic training set (7437 of 12800 samples), before any training step: nothing to resume");
    }
    core::clear_stop_request();
  }
}

TEST(SetupProgress, OnlyRankZeroOfALaunchedRunSpeaks) {
  EXPECT_TRUE(train::SetupProgress::rank_zero()) << "a plain run (the tests run with no launcher variables)";
  ::setenv("RANK", "1", 1);
  ::setenv("WORLD_SIZE", "2", 1);
  EXPECT_FALSE(train::SetupProgress::rank_zero());
  ::setenv("RANK", "0", 1);
  EXPECT_TRUE(train::SetupProgress::rank_zero());
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
}
