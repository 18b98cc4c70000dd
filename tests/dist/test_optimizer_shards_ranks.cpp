// distributed.shard_optimizer (ZeRO stage 1) on two real ranks (this binary runs under
// `mpirun -np 2`): each rank keeps its share of the optimizer state, the training is the
// unsharded run's bit for bit, and a checkpoint holds the whole state, so it resumes on any world.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <sstream>

#include "gputrain/core/stop_signal.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/two_ranks.hpp"

using namespace gputrain;
using namespace gputrain::train;
using namespace two_ranks;

namespace {

// AdamW keeps two moments and a step count per parameter; clipping reads every gradient.
std::vector<std::string> adamw(std::vector<std::string> more = {}) {
  std::vector<std::string> all{"optimizer.name=adamw", "optimizer.lr=0.01", "optimizer.weight_decay=0.05", "train.clip_grad_norm=0.5"};
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

// Rank `r`'s value, on both ranks.
std::int64_t of_rank(std::int64_t mine, int r) { return peers().all_gather({mine}, "the test's gathering")[static_cast<std::size_t>(r)]; }

TrainerOptions stop_after(std::int64_t at) {
  auto options = test_support::quiet_trainer();
  options.after_step = [at](std::int64_t step) {
    if (step == at) core::request_stop();
  };
  return options;
}

}  // namespace

TEST(ShardedOptimizer, TrainsBitForBitAsTheUnshardedRunWithEachRankHoldingItsShareOfTheState) {
  Trainer plain(run("zero-plain", adamw()), test_support::quiet_trainer());
  const auto unsharded = plain.fit();
  Trainer sharded(run("zero-sharded", adamw({"distributed.shard_optimizer=true"})), test_support::quiet_trainer());
  const auto result = sharded.fit();
  // Messages of 1 KiB: the weights (1280 and 2048 bytes) go alone, in place; the rest packed.
  Trainer unpacked(run("zero-unpacked", adamw({"distributed.shard_optimizer=true", "distributed.bucket_mb=0.001"})),
                   test_support::quiet_trainer());
  unpacked.fit();

  const auto mine = flat_parameters(sharded);
  EXPECT_TRUE(at::equal(mine, flat_parameters(plain))) << "max difference " << (mine - flat_parameters(plain)).abs().max().item<float>();
  EXPECT_TRUE(at::equal(mine, from_rank0(mine))) << "the ranks' parameters drifted apart: an update was not shared";
  EXPECT_TRUE(at::equal(flat_parameters(unpacked), mine)) << "a parameter broadcast on its own was not shared";
  EXPECT_GT(result.parameter_share_seconds, 0.0);
  EXPECT_EQ(unsharded.parameter_share_seconds, 0.0);
  // The shares split the whole state between them: neither rank holds all of it, both together do.
  EXPECT_GT(result.optimizer_state_bytes, 0);
  EXPECT_LT(result.optimizer_state_bytes, unsharded.optimizer_state_bytes);
  EXPECT_EQ(of_rank(result.optimizer_state_bytes, 0) + of_rank(result.optimizer_state_bytes, 1), unsharded.optimizer_state_bytes);
  barrier();
}

// The checkpoint of a sharded run gathers both ranks' state: a resume on two sharded ranks goes on
// exactly, and one on a single unsharded process (the same global batch) goes on the same path.
TEST(ShardedOptimizer, ItsCheckpointHoldsTheWholeStateAndResumesOnAnyNumberOfRanks) {
  Trainer reference(run("zero-reference", adamw()), test_support::quiet_trainer());
  reference.fit();
  const auto expected = flat_parameters(reference);
  const auto sharded = adamw({"distributed.shard_optimizer=true"});
  for (const auto* name : {"zero-stopped", "zero-regrouped"}) {
    Trainer first(run(name, sharded), stop_after(3));
    EXPECT_TRUE(first.fit().interrupted);
    core::clear_stop_request();
  }
  barrier();

  Trainer resumed(run("zero-stopped", sharded, /*fresh=*/false), test_support::quiet_trainer());
  const auto result = resumed.fit();
  EXPECT_EQ(result.start_step, 3);
  EXPECT_TRUE(at::equal(flat_parameters(resumed), expected)) << "the resumed sharded run left the uninterrupted one's path";

  if (my_rank() == 0) {
    as_plain_process([&] {
      auto config = run("zero-regrouped", adamw({"train.batch_size=16"}), /*fresh=*/false);
      Trainer one(config, test_support::quiet_trainer());
      const auto alone = one.fit();
      EXPECT_EQ(alone.world_size, 1);
      EXPECT_EQ(alone.start_step, 3);
      // Summed in another order by one process: fp32 rounding apart. A moment or step count
      // missing from the file would move the weights by orders of magnitude more.
      EXPECT_TRUE(at::allclose(flat_parameters(one), expected, 1e-5, 1e-6))
          << "max difference " << (flat_parameters(one) - expected).abs().max().item<float>();
    });
  }
  barrier();
}

// best.pt is written while the ranks gather the state together; then each keeps its own share.
TEST(ShardedOptimizer, BestCheckpointsAreWrittenWithEveryRankTakingPart) {
  const auto config = run("zero-best", adamw({"distributed.shard_optimizer=true", "checkpoint.every_epochs=0"}));
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.steps, 12);
  barrier();
  if (my_rank() == 0) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(config.logging.dir) / "checkpoints" / "best.pt"));
  }
  EXPECT_EQ(of_rank(result.optimizer_state_bytes, 0) + of_rank(result.optimizer_state_bytes, 1), 2 * 4 * flat_parameters(trainer).numel())
      << "after gathering for best.pt, the ranks hold their own shares again (two fp32 moments per element)";
  barrier();
}
