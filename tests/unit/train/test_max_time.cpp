// train.max_time: the run ends as a finished one does once it has trained that long, counted
// across resumes. Each step here sleeps 0.1 s, so a budget of 0.6 s ends the run by step 6 at the
// latest whatever the machine's speed; no test depends on how much sooner.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/damaged_copies.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

namespace {

constexpr double kStepSleep = 0.1;

// Trains `config` with every step at least kStepSleep long; the console in `lines` mode, captured.
test_support::ConsoleRun fit_slowly(Config config) {
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  options.on_batch = [](const data::Batch&) { std::this_thread::sleep_for(std::chrono::duration<double>(kStepSleep)); };
  config.logging.progress = "lines";
  Trainer trainer(std::move(config), options);
  auto result = trainer.fit();
  return {std::move(result), console.str()};
}

// 50 epochs of 6 steps: far more than 0.6 s of 0.1 s steps.
Config budgeted_run(const std::string& name, std::vector<std::string> overrides = {}, bool fresh = true) {
  overrides.insert(overrides.begin(), {"train.epochs=50", "train.max_time=0.6s", "logging.every_steps=1"});
  return test_support::small_run(name, overrides, fresh);
}

}  // namespace

TEST(MaxTime, EndsTheRunAsAFinishedOneWithACheckpointAndWeights) {
  const auto [result, console] = fit_slowly(budgeted_run("max-time"));
  EXPECT_TRUE(result.time_limit_reached);
  EXPECT_FALSE(result.interrupted);
  EXPECT_GE(result.steps, 1);
  EXPECT_LE(result.steps, 6) << "0.6 s of 0.1 s steps";
  EXPECT_EQ(result.total_steps, 300);
  EXPECT_GE(result.trained_seconds, 0.6);
  ASSERT_FALSE(result.last_checkpoint.empty());
  EXPECT_TRUE(fs::exists(result.weights_path)) << "the weights are written, as at a run's end";
  // The checkpoint records the time, which a resume counts on from.
  Trainer reader(budgeted_run("max-time", {}, false), test_support::quiet_trainer());
  const auto saved = load_checkpoint_weights(result.last_checkpoint, reader.model(), c10::Device(at::kCPU));
  EXPECT_GE(saved.trained_seconds, 0.6);
  EXPECT_LE(saved.trained_seconds, result.trained_seconds);
  // The ETA is what is left of the budget (0:00 or 0:01), not 294 more steps' ~0:29.
  EXPECT_TRUE(std::regex_search(console, std::regex("step 1/300 .* ETA 0:0[01]"))) << console;
  const std::string outcome =
      "stopped at train.max_time 0.6s after step " + std::to_string(result.steps) + " of 300; checkpoint " + result.last_checkpoint;
  EXPECT_NE(test_support::file_bytes((fs::path(result.run_dir) / "training.log").string()).find(outcome), std::string::npos)
      << "training.log keeps why the run ended";
}

TEST(MaxTime, CountsTheTimeOfTheRunsBeforeAResume) {
  const auto first = fit_slowly(budgeted_run("max-time-resume")).result;
  ASSERT_TRUE(first.time_limit_reached);
  // Again with the same budget: it is used up, and nothing is trained.
  const auto [again, said] = fit_slowly(budgeted_run("max-time-resume", {}, false));
  EXPECT_EQ(again.start_step, first.steps);
  EXPECT_EQ(again.steps, first.steps);
  EXPECT_TRUE(again.time_limit_reached);
  EXPECT_TRUE(std::regex_search(said, std::regex("nothing left to train: this run has trained for \\d+s, its train.max_time of 0.6s; "
                                                 "to train on, raise train.max_time \\(none: no limit\\)")))
      << said;
  // A larger budget trains on from the checkpoint and says how much of it the earlier run used.
  const auto [longer, noted] =
      fit_slowly(budgeted_run("max-time-resume", {"train.max_time=1h", "train.max_steps=" + std::to_string(first.steps + 2)}, false));
  EXPECT_EQ(longer.start_step, first.steps);
  EXPECT_EQ(longer.steps, first.steps + 2);
  EXPECT_FALSE(longer.time_limit_reached);
  // Counted on from the checkpoint's figure (the first run's own total also holds the time after
  // its checkpoint, writing the weights, which no resume counts).
  Trainer reader(budgeted_run("max-time-resume", {}, false), test_support::quiet_trainer());
  const auto saved = load_checkpoint_weights(first.last_checkpoint, reader.model(), c10::Device(at::kCPU));
  EXPECT_GE(longer.trained_seconds, saved.trained_seconds + 2 * kStepSleep);
  EXPECT_TRUE(std::regex_search(noted, std::regex("train.max_time 1h: \\d+s of it used before this resume, 59m\\d+s left"))) << noted;
}

// Time that runs out with the last step done is a plain finish: nothing is said about the budget.
TEST(MaxTime, RunningOutAtTheLastStepIsAPlainFinish) {
  const auto [result, console] = fit_slowly(budgeted_run("max-time-last", {"train.max_steps=1", "train.max_time=0.05s"}));
  EXPECT_EQ(result.steps, 1);
  EXPECT_FALSE(result.time_limit_reached);
  EXPECT_EQ(console.find("max_time"), std::string::npos) << console;
}

TEST(MaxTime, ABudgetNotReachedChangesNothing) {
  const auto [result, console] = fit_slowly(budgeted_run("max-time-ample", {"train.max_steps=3", "train.max_time=1h"}));
  EXPECT_EQ(result.steps, 3);
  EXPECT_FALSE(result.time_limit_reached);
}
