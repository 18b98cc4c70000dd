// The callback seam: the hooks a user's callback gets, its state saved in checkpoints and restored
// on resume, its stop; and a checkpoint written before callbacks existed (format 1), resumed.
#include <gtest/gtest.h>
#include <torch/serialize/archive.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/data/batch.hpp"
#include "gputrain/train/callback.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/scratch_folder.hpp"
#include "support/small_run.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using namespace gputrain;
using namespace gputrain::train;

namespace {

// Writes down every hook it gets, and counts the steps it saw in its state.
class Recorder : public Callback {
 public:
  std::string name() const override { return "recorder"; }
  void on_fit_start(RunControl& run) override { calls.push_back("fit_start@" + std::to_string(run.progress().step)); }
  void on_step_end(RunControl&, std::int64_t step) override {
    ++steps_seen;
    last_step = step;
  }
  void on_log(RunControl&, const StepMetrics& m, const LossWindow& w) override {
    calls.push_back("log@" + std::to_string(m.step) + "[" + std::to_string(w.first_step) + "-" + std::to_string(w.last_step) + "]");
  }
  void on_validation_end(RunControl& run, const EpochMetrics& m) override {
    calls.push_back("validation@" + std::to_string(run.progress().epoch) + (m.val_loss ? "+val" : ""));
  }
  void on_epoch_end(RunControl& run, const EpochMetrics&) override { calls.push_back("epoch_end@" + std::to_string(run.progress().epoch)); }
  void on_fit_end(RunControl&, FitResult& result) override { calls.push_back("fit_end@" + std::to_string(result.steps)); }
  CallbackState state_dict() const override { return {{"steps_seen", static_cast<double>(steps_seen)}}; }
  void load_state_dict(const CallbackState& state) override {
    const auto saved = state.find("steps_seen");
    steps_seen = saved == state.end() ? 0 : static_cast<std::int64_t>(saved->second);
  }

  std::vector<std::string> calls;
  std::int64_t steps_seen = 0, last_step = 0;
};

// Ends the run after a given step, as a user's rule would.
class StopAfter : public Callback {
 public:
  explicit StopAfter(std::int64_t step) : step_(step) {}
  std::string name() const override { return "stop_after"; }
  void on_step_end(RunControl& run, std::int64_t step) override {
    if (step == step_) run.request_stop(StopReason::request, "enough after step " + std::to_string(step));
  }

 private:
  std::int64_t step_;
};

// Takes its time setting up, as NVML's or an MLflow run's start can.
class SlowStart : public Callback {
 public:
  std::string name() const override { return "slow_start"; }
  void on_fit_start(RunControl&) override { std::this_thread::sleep_for(std::chrono::milliseconds(1500)); }
};

FitResult fit_with(const Config& config, std::vector<std::shared_ptr<Callback>> callbacks) {
  auto options = test_support::quiet_trainer();
  options.callbacks = std::move(callbacks);
  return Trainer(config, options).fit();
}

}  // namespace

TEST(Callbacks, GetEveryHookInTheLoopsOrder) {
  // 6 steps an epoch, 2 epochs, a step line every 2 steps (and the first).
  const auto config = test_support::small_run("callback-hooks");
  auto recorder = std::make_shared<Recorder>();
  const auto result = fit_with(config, {recorder});
  EXPECT_EQ(result.steps, 12);
  EXPECT_EQ(recorder->steps_seen, 12);
  EXPECT_EQ(recorder->last_step, 12);
  const std::vector<std::string> expected{"fit_start@0",      "log@1[1-1]",  "log@2[2-2]", "log@4[3-4]",   "log@6[5-6]",
                                          "validation@1+val", "epoch_end@1", "log@8[7-8]", "log@10[9-10]", "log@12[11-12]",
                                          "validation@2+val", "epoch_end@2", "fit_end@12"};
  EXPECT_EQ(recorder->calls, expected);
}

// A callback's set-up is not training: the run's step time, and so its samples/s, start after it.
TEST(Callbacks, SetUpInOnFitStartIsNotCountedAsStepTime) {
  const auto config = test_support::small_run("callback-slow-start", {"train.max_steps=2"});
  const auto result = fit_with(config, {std::make_shared<SlowStart>()});
  EXPECT_EQ(result.steps, 2);
  EXPECT_GT(result.step_seconds, 0);
  EXPECT_LT(result.step_seconds, 1.0) << "the callback's 1.5 s counted as training";
}

TEST(Callbacks, StateIsSavedUnderTheirNameAndRestoredOnResume) {
  auto config = test_support::small_run("callback-state", {"train.max_steps=4", "checkpoint.every_steps=2"});
  auto first = std::make_shared<Recorder>();
  const auto result = fit_with(config, {first});
  ASSERT_FALSE(result.last_checkpoint.empty());
  const auto saved = checkpoint_progress(result.last_checkpoint);
  ASSERT_TRUE(saved.callbacks.count("recorder"));
  EXPECT_EQ(saved.callbacks.at("recorder").at("steps_seen"), 4);
  // The built-in ones are there too, under their names.
  EXPECT_TRUE(saved.callbacks.count("best_checkpoint"));
  EXPECT_TRUE(saved.callbacks.count("divergence_stop"));

  config.train.max_steps = 6;  // the same run, longer
  auto resumed = std::make_shared<Recorder>();
  const auto again = fit_with(config, {resumed});
  EXPECT_EQ(again.start_step, 4);
  EXPECT_EQ(resumed->calls.front(), "fit_start@4");
  EXPECT_EQ(resumed->steps_seen, 6) << "4 restored from the checkpoint, then 2 more";
}

TEST(Callbacks, ARequestedStopEndsTheRunAsAFinishedOneWithTheReasonKept) {
  const auto config = test_support::small_run("callback-stop");
  const auto result = fit_with(config, {std::make_shared<StopAfter>(3)});
  EXPECT_EQ(result.steps, 3);
  EXPECT_FALSE(result.interrupted);
  EXPECT_FALSE(result.time_limit_reached);
  EXPECT_TRUE(result.early_stop_reason.empty());
  ASSERT_FALSE(result.last_checkpoint.empty()) << "the state it stopped in is saved";
  EXPECT_TRUE(fs::exists(result.weights_path));
  std::ifstream log(fs::path(result.run_dir) / "training.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("stopped: enough after step 3"), std::string::npos) << text;
}

// A checkpoint written before callbacks existed (gputrain at cbf4c1e, format 1: early stopping's,
// the plateau schedule's and best.pt's state as progress fields), made by tests/data/checkpoints/
// format1/README.md's command: 3 epochs at lr 0 with val_accuracy flat at 50 %.
TEST(Callbacks, AFormat1CheckpointResumesWithItsStateInTheCallbacks) {
  const fs::path fixture = fs::path(gputrain::test_support::test_data_dir()) / "checkpoints" / "format1";
  const auto saved = checkpoint_progress((fixture / "checkpoints" / "step-00000012.pt").string());
  EXPECT_EQ(saved.step, 12);
  EXPECT_EQ(saved.epoch, 3);
  EXPECT_EQ(saved.lr_scale, 0.25) << "two plateau decays at gamma 0.5";
  EXPECT_EQ(saved.callbacks.at("early_stop").at("epochs_without_improvement"), 2);
  EXPECT_EQ(saved.callbacks.at("early_stop").at("reference"), 0.5);
  EXPECT_EQ(saved.callbacks.at("best_checkpoint").at("best"), 0.5);
  EXPECT_EQ(saved.callbacks.at("best_checkpoint").at("best_epoch"), 1);
  EXPECT_EQ(saved.callbacks.at("plateau").at("epochs_without_improvement"), 0);

  // Resumed for one more epoch: early stopping counts on from 2 and stops the run at 3, which
  // then ends on best.pt's weights (epoch 1's), as the run would have without the new version.
  test_support::ScratchFolder run("format1-resume");
  fs::copy(fixture, run.path, fs::copy_options::recursive);
  auto config = load_config({{(run.path / "config.yaml").string()},
                             {"logging.dir=" + run.path.string(), "checkpoint.dir=", "train.epochs=4", "logging.progress=off"},
                             ""});
  const auto result = fit_with(config, {});
  EXPECT_EQ(result.start_step, 12);
  EXPECT_EQ(result.steps, 16);
  EXPECT_EQ(result.early_stop_reason,
            "val_accuracy has not improved on 50.00% by more than 1 points for 3 epochs (train.early_stop_patience: 3)");
  EXPECT_EQ(result.weights_epoch, 1);
}

TEST(Callbacks, ACheckpointOfANewerFormatIsRefusedWithTheFix) {
  test_support::ScratchFolder folder("future-checkpoint");
  const auto path = (folder.path / "step-00000001.pt").string();
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(std::int64_t{99}));
  archive.save_to(path);
  try {
    checkpoint_progress(path);
    FAIL() << "a format-99 checkpoint was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is of format 99, written by a newer gputrain"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("checkpoint.resume: never"), std::string::npos);
  }
}

// divergence_stop under fp16's GradScaler: one batch of inf is one skipped step, and the run goes
// on; a loss that stays non-finite with every step skipped stops it at the 8th such step.
TEST(Callbacks, DivergenceStopSparesOneSkippedStepButNotEight) {
  const auto run_with_inf_from = [](std::int64_t first, std::int64_t last) {
    auto options = test_support::quiet_trainer();
    auto batches = std::make_shared<std::int64_t>(0);
    options.on_batch = [=](const data::Batch& batch) {
      ++*batches;
      if (*batches >= first && *batches <= last) batch.inputs.fill_(std::numeric_limits<float>::infinity());
    };
    Trainer trainer(test_support::small_run("divergence-" + std::to_string(last),
                                            {"train.precision=fp16-mixed", "logging.every_steps=1", "model.dropout=0.0"}),
                    options);
    return trainer.fit();
  };
  const auto spared = run_with_inf_from(3, 3);
  EXPECT_EQ(spared.steps, 12);
  EXPECT_GE(spared.skipped_steps, 1);
  try {
    run_with_inf_from(2, 100);
    FAIL() << "a loss that stays nan did not stop the run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("over step 9 and the GradScaler skipped all of them"), std::string::npos) << e.what();
  }
}
