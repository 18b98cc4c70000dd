// The disk-space check before the first step: its estimate of a checkpoint against real files,
// and its arithmetic and message.
#include <gtest/gtest.h>

#include <filesystem>

#include "gputrain/core/error.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "train/checkpoint/checkpoint_space.hpp"  // private: the trainer's pre-flight check

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

TEST(CheckpointSpace, TheEstimateCoversTheRealFileWithinItsMargin) {
  for (const std::string optimizer : {"sgd", "adamw"}) {
    const auto config = test_support::small_run("checkpoint-size-" + optimizer,
                                                {"model.hidden=[256, 128]", "optimizer.name=" + optimizer, "train.max_steps=1"});
    Trainer trainer(config, test_support::quiet_trainer());
    const auto result = trainer.fit();
    const auto real = fs::file_size(result.last_checkpoint);
    const auto estimate = estimate_checkpoint_bytes(trainer.model(), config.optimizer);
    EXPECT_GE(estimate, real) << optimizer;
    EXPECT_LE(estimate, real + 256 * 1024) << optimizer;  // no more than its margin for the archive's records
  }
}

TEST(CheckpointSpace, CountsWhatTheFolderHoldsAtItsFullestLessWhatIsThere) {
  CheckpointSpace space;
  space.checkpoint_bytes = 100;
  space.keep_last = 3;
  space.keeps_best = true;
  space.weights_bytes = 40;
  EXPECT_EQ(space.needed(), 5 * 100 + 40U);  // 3 kept, the next, best.pt; and the weights
  space.already_there = 400;                 // a resumed run's 3 checkpoints and best.pt
  EXPECT_EQ(space.needed(), 140U);
  space.already_there = 10000;
  EXPECT_EQ(space.needed(), 0U);
}

TEST(CheckpointSpace, TooLittleRoomIsAnErrorWithTheFiguresAndTheFixes) {
  CheckpointSpace space;
  space.checkpoint_bytes = 2 * 1024 * 1024;
  space.keep_last = 2;
  EXPECT_NO_THROW(check_checkpoint_space(space, 6 * 1024 * 1024, "runs/x/checkpoints"));
  try {
    check_checkpoint_space(space, 5 * 1024 * 1024, "runs/x/checkpoints");
    ADD_FAILURE() << "5 MiB taken for enough";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("need about 6.00 MiB free on the disk of 'runs/x/checkpoints', and it has 5.00 MiB: 2.00 MiB each"),
              std::string::npos)
        << what;
    EXPECT_NE(std::string(e.remedy()).find("lower checkpoint.keep_last"), std::string::npos) << e.remedy();
  }
}
