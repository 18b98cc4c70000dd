// A checkpoint the disk refuses (full, over quota, past the file-size limit) ends the run with the
// system's reason, its fix, and the checkpoint the run goes on from; nothing written before is lost.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/file_size_limit.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/text_checks.hpp"

using gputrain::test_support::contains;
using namespace gputrain;

namespace {

// The error `config`'s run ends with when, from optimizer step `step` on, no file may grow past
// 2 KiB (a checkpoint is several times that); the limit is lifted again when it returns.
Error error_when_files_stop_growing_at(const train::Config& config, std::int64_t step) {
  test_support::FileSizeLimit limit;
  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t at) {
    if (at == step) limit.set(2048);
  };
  try {
    train::Trainer(config, options).fit();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the run went on past a refused checkpoint";
  return Error("", "");
}

}  // namespace

TEST(RefusedSaves, ARefusedCheckpointEndsTheRunNamingTheOneItResumesFrom) {
  // 12 steps, a checkpoint every 3; files stop growing at step 7, so the save at step 9 is refused.
  const std::vector<std::string> settings{"checkpoint.every_steps=3", "logging.tensorboard=false"};
  const auto config = test_support::small_run("refused-save", settings);
  const auto folder = std::filesystem::path(config.logging.dir) / "checkpoints";
  const auto e = error_when_files_stop_growing_at(config, 7);
  EXPECT_TRUE(contains(e.what(), "File too large (saving the checkpoint of step 9)")) << e.what();
  EXPECT_TRUE(contains(e.remedy(), "ulimit -f")) << e.remedy();
  EXPECT_TRUE(contains(e.remedy(), "then the same command resumes from " + (folder / "step-00000006.pt").string())) << e.remedy();
  EXPECT_EQ(e.exit_code(), ExitCode::failure);
  EXPECT_FALSE(std::filesystem::exists(folder / "step-00000009.pt"));
  EXPECT_FALSE(std::filesystem::exists(folder / "step-00000009.pt.partial"));

  // Fixed: the same config goes on from step 6 and finishes.
  const auto result =
      train::Trainer(test_support::small_run("refused-save", settings, /*fresh=*/false), test_support::quiet_trainer()).fit();
  EXPECT_EQ(result.start_step, 6);
  EXPECT_EQ(result.steps, 12);
}

TEST(RefusedSaves, ARefusedFirstCheckpointSaysTheRunStartsOver) {
  const auto config = test_support::small_run("refused-first-save", {"checkpoint.every_steps=3", "logging.tensorboard=false"});
  const auto e = error_when_files_stop_growing_at(config, 1);
  EXPECT_TRUE(contains(e.what(), "(saving the checkpoint of step 3)")) << e.what();
  EXPECT_TRUE(contains(e.remedy(), "no checkpoint of this run is on disk yet, so it will start over")) << e.remedy();
}

// The last write of a run: its checkpoint holds the state, and a second run writes the weights.
TEST(RefusedSaves, RefusedFinalWeightsSayTheStateIsSavedAndTheSameCommandWritesThem) {
  auto config = test_support::small_run("refused-weights");
  const auto run = std::filesystem::path(config.logging.dir);
  std::filesystem::create_directories(run / "model.safetensors.partial");  // where the weights are written first: refused
  try {
    train::Trainer(config, test_support::quiet_trainer()).fit();
    FAIL() << "model.safetensors was written";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "model.safetensors.partial")) << e.what();
    EXPECT_TRUE(contains(e.remedy(), "the run's final state is saved (" + (run / "checkpoints" / "step-00000012.pt").string() +
                                         "), so the same command then writes model.safetensors without training again"))
        << e.remedy();
  }
  std::filesystem::remove(run / "model.safetensors.partial");
  const auto result = train::Trainer(test_support::small_run("refused-weights", {}, /*fresh=*/false), test_support::quiet_trainer()).fit();
  EXPECT_EQ(result.start_step, 12);
  EXPECT_TRUE(std::filesystem::exists(run / "model.safetensors"));
}

// A run whose folder is deleted under it (someone cleaning up runs/) stops at its next checkpoint
// instead of making the folder again, where a new run of that name may already be writing.
TEST(RefusedSaves, ARunWhoseFolderIsDeletedStopsAtItsNextCheckpointWithoutMakingItAgain) {
  const auto config = test_support::small_run("folder-deleted", {"checkpoint.every_steps=3", "logging.tensorboard=false"});
  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t at) {
    if (at == 4) std::filesystem::remove_all(config.logging.dir);
  };
  try {
    train::Trainer(config, options).fit();
    ADD_FAILURE() << "the run went on after its folder was deleted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "'" + config.logging.dir + "' (logging.dir) was deleted or moved away while this run trained"))
        << e.what();
    EXPECT_EQ(e.exit_code(), ExitCode::failure);
  }
  EXPECT_FALSE(std::filesystem::exists(config.logging.dir)) << "made again by the run";
}
