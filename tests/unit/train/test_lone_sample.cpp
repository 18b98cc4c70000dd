// An epoch's last pass of one sample, which batch norm cannot train on: left out before training,
// or the run refused, instead of a failure at the first epoch's end (train/setup/lone_sample.hpp).
#include <gtest/gtest.h>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "train/setup/lone_sample.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

// 97 samples in batches of 16: each epoch ends on a batch of one.
Config lone_run(const std::string& name, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), "data.samples=97");
  return test_support::small_run("lone-" + name, std::move(overrides));
}

}  // namespace

TEST(LoneSample, TheLastPassHoldsOneSampleWhenTheDivisionLeavesOne) {
  EXPECT_EQ(lone_last_pass(97, 16, 16), 1);
  EXPECT_EQ(lone_last_pass(96, 16, 16), 0);
  EXPECT_EQ(lone_last_pass(98, 16, 16), 0);
  EXPECT_EQ(lone_last_pass(101, 32, 4), 1);  // a last step of 5: passes of 4 and 1
  EXPECT_EQ(lone_last_pass(102, 32, 4), 0);  // 6: passes of 4 and 2
  EXPECT_EQ(lone_last_pass(1, 16, 16), 1);
  EXPECT_EQ(lone_last_pass(7, 1, 1), 0);  // every pass is one sample: no last pass alone
  EXPECT_EQ(lone_last_pass(0, 16, 16), 0);
}

TEST(LoneSample, ABatchNormModelLeavesOutTheEpochsLastSample) {
  Trainer trainer(lone_run("batch-norm", {"model.norm=batch"}), test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.total_steps, 12);  // 96 samples an epoch: 6 steps, not 7
  EXPECT_EQ(result.samples, 2 * 96);  // one of the 97 left out of each epoch
  EXPECT_FALSE(result.interrupted);
}

TEST(LoneSample, AModelWithoutBatchNormKeepsEverySample) {
  Trainer trainer(lone_run("layer-norm", {"model.norm=layer"}), test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.total_steps, 14);
  EXPECT_EQ(result.samples, 2 * 97);
}

TEST(LoneSample, PassesOfOneSampleAreRefusedBeforeTraining) {
  try {
    Trainer trainer(lone_run("one", {"model.norm=batch", "train.batch_size=1", "train.grad_accum=4"}), test_support::quiet_trainer());
    FAIL() << "a batch of one was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("train.batch_size 1 puts one sample in each pass"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("model.norm: layer"), std::string::npos) << e.remedy();
    EXPECT_NE(e.remedy().find("grad_accum"), std::string::npos) << e.remedy();
  }
}

TEST(LoneSample, EveryRanksShareIsCountedAndTheStepsAreTheLargestRanks) {
  auto config = lone_run("ranks", {"model.norm=batch"});
  const auto data = open_data(config);
  // 99 samples over 2 ranks: 50 and 49, in steps of 16: 50 ends on a pass of 2, 49 on one.
  const auto two = plan_lone_samples(config, data, {99, 2, 16, 16});
  EXPECT_TRUE(two.leave_out);
  EXPECT_EQ(two.steps_per_epoch, 4);
  EXPECT_NE(two.note.find("that sample is left out"), std::string::npos) << two.note;
  // 97 over 3 ranks: 33, 32, 32 in steps of 16: only the first rank's ends alone.
  const auto three = plan_lone_samples(config, data, {97, 3, 16, 16});
  EXPECT_TRUE(three.leave_out);
  EXPECT_EQ(three.steps_per_epoch, 2);
  // 98 over 2 ranks: 49 each, each ending alone.
  const auto each = plan_lone_samples(config, data, {98, 2, 16, 16});
  EXPECT_NE(each.note.find("2 such samples, one per rank, are left out"), std::string::npos) << each.note;
  EXPECT_NE(each.note.find("train.batch_size 17 keeps every sample"), std::string::npos) << each.note;
  EXPECT_FALSE(plan_lone_samples(config, data, {96, 2, 16, 16}).leave_out);
  EXPECT_THROW(plan_lone_samples(config, data, {2, 2, 16, 16}), UsageError);  // one sample a rank: nothing would train
}

// batch_size auto's search whose only probe is one sample (train.max_batch_size 1) says so,
// rather than LibTorch's message alone.
TEST(LoneSample, AnAutoBatchThatCanProbeOnlyOneSampleSaysWhy) {
  try {
    Trainer trainer(lone_run("auto", {"model.norm=batch", "train.batch_size=auto", "train.max_batch_size=1"}),
                    test_support::quiet_trainer());
    FAIL() << "a search of one-sample probes was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_size auto: its probe step of 1 sample failed in LibTorch"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("train.max_batch_size"), std::string::npos) << e.remedy();
  }
}
