// train.profile: a window of steps traced with LibTorch's Kineto profiler into a Chrome Trace
// Format file, with gputrain's named ranges (data wait, forward, backward, optimizer, validation,
// checkpoint) among the CPU operators, and a line that says where it is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

TEST(ProfilerTrace, AWindowOfStepsIsTracedWithGputrainsRanges) {
  // Steps 5 to 7 of 12: epoch 1 ends after step 6, so its validation and checkpoint are inside.
  Trainer trainer(test_support::small_run("trace", {"train.profile.start_step=5", "train.profile.steps=3"}), test_support::quiet_trainer());
  const auto result = trainer.fit();
  const auto path = fs::path(result.run_dir) / "traces" / "trace-step5.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const auto trace = nlohmann::json::parse(in);
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::set<std::string> names;
  int operators = 0, complete = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (!event.contains("name")) continue;
    const std::string name = event["name"];
    names.insert(name);
    operators += name.rfind("aten::", 0) == 0;
    complete += event.value("ph", "") == "X" && event.contains("ts") && event.contains("dur");
  }
  for (const char* range : {"gputrain::data_wait", "gputrain::forward", "gputrain::backward", "gputrain::optimizer", "gputrain::validation",
                            "gputrain::checkpoint"})
    EXPECT_TRUE(names.count(range)) << range << " is not in the trace";
  EXPECT_GT(operators, 10) << "the CPU operators";
  EXPECT_GT(complete, operators / 2) << "complete events (ph X) with a start and a duration";
  std::ifstream log(fs::path(result.run_dir) / "training.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("profiler trace of steps 5-7: " + path.string()), std::string::npos) << text;
}

// A window the run never reaches writes nothing; one it ends inside writes what it traced.
TEST(ProfilerTrace, ARunEndingInsideTheWindowWritesWhatItTraced) {
  Trainer trainer(test_support::small_run("trace-end", {"train.profile.start_step=11", "train.profile.steps=10"}),
                  test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_TRUE(fs::exists(fs::path(result.run_dir) / "traces" / "trace-step11.json"));
  Trainer never(test_support::small_run("trace-never", {"train.profile.start_step=50"}), test_support::quiet_trainer());
  const auto none = never.fit();
  EXPECT_FALSE(fs::exists(fs::path(none.run_dir) / "traces"));
  // ... and says so, rather than ending with no trace and no word.
  std::ifstream log(fs::path(none.run_dir) / "training.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("no profiler trace: the run ended at step 12, before train.profile.start_step 50 (lower it, or train longer)"),
            std::string::npos)
      << text;
}
