// model.sync_batch_norm with two real ranks (MPI on the CPU): the layer against torch::nn's
// BatchNorm on the global batch, and whole runs against one process with the global batch.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>

#include <filesystem>
#include <fstream>

#include "gputrain/train/model.hpp"
#include "gputrain/train/sync_batch_norm.hpp"
#include "support/quiet_trainer.hpp"
#include "support/two_ranks.hpp"
#include "train/models/layers/sync_batch_norm.hpp"

using namespace gputrain;
using namespace gputrain::train;
using namespace two_ranks;
using test_support::expect_close;
namespace fs = std::filesystem;

namespace {

at::Tensor summed_over_ranks(const at::Tensor& local) {
  auto sum = local.clone();
  peers().all_reduce_sum(sum, "the test's sum")->wait();
  return sum;
}

// Rank 0 holds the global batch's first `rank0_rows` samples, rank 1 the rest. Two training
// forwards and backwards of the synchronised layer must give what torch::nn's BatchNorm gives on
// the whole batch: outputs and input gradients (each rank's rows), weight and bias gradients
// (summed by the gradient all-reduce) and running statistics.
template <typename Plain, typename Synced>
void expect_global_batch_norm(std::vector<std::int64_t> shape, std::int64_t rank0_rows) {
  const auto channels = shape[1];
  at::manual_seed(11);  // the same tensors on both ranks
  const auto x = at::randn(shape) * 3 + 1.5;
  const auto upstream = at::randn(shape);
  const auto weight = at::rand({channels}) + 0.5, bias = at::randn({channels});
  Plain plain(channels);
  Synced synced(channels);
  for (auto* w : {&plain->weight, &synced->weight}) w->set_data(weight.clone());
  for (auto* b : {&plain->bias, &synced->bias}) b->set_data(bias.clone());
  auto sync = std::make_shared<BatchNormSync>(peers());
  synced->synchronise_with(sync, "bn");

  const std::int64_t lo = my_rank() == 0 ? 0 : rank0_rows, hi = my_rank() == 0 ? rank0_rows : shape[0];
  for (int pass = 0; pass < 2; ++pass) {
    sync->begin_step(pass, 1);
    const auto whole = x.clone().requires_grad_(true);
    const auto expected = plain->forward(whole);
    (expected * upstream).sum().backward();
    const auto mine = x.slice(0, lo, hi).clone().requires_grad_(true);
    const auto out = synced->forward(mine);
    (out * upstream.slice(0, lo, hi)).sum().backward();
    const auto label = "pass " + std::to_string(pass) + ", rank " + std::to_string(my_rank());
    expect_close(out, expected.slice(0, lo, hi).detach(), "output, " + label);
    expect_close(mine.grad(), whole.grad().slice(0, lo, hi), "input gradient, " + label);
    expect_close(summed_over_ranks(synced->weight.grad()), plain->weight.grad(), "weight gradient, " + label);
    expect_close(summed_over_ranks(synced->bias.grad()), plain->bias.grad(), "bias gradient, " + label);
    expect_close(synced->running_mean, plain->running_mean, "running mean, " + label);
    expect_close(synced->running_var, plain->running_var, "running variance, " + label);
    for (auto* m : {&plain->weight, &plain->bias, &synced->weight, &synced->bias}) m->mutable_grad().reset();
  }
  EXPECT_EQ(synced->num_batches_tracked.template item<std::int64_t>(), 2);
  synced->eval();  // evaluation reads the running statistics, which every rank holds alike
  plain->eval();
  expect_close(synced->forward(x), plain->forward(x).detach(), "evaluation output");
}

}  // namespace

TEST(TwoRanksSyncBatchNorm, Normalises2dLikeOneBatchNormOverBothRanksSamples) {
  expect_global_batch_norm<torch::nn::BatchNorm2d, SyncableBatchNorm2d>({8, 3, 5, 4}, 4);
}

TEST(TwoRanksSyncBatchNorm, Normalises1dLikeOneBatchNormWithUnevenShares) {
  expect_global_batch_norm<torch::nn::BatchNorm1d, SyncableBatchNorm1d>({9, 6}, 6);
}

TEST(TwoRanksSyncBatchNorm, ARankWithNoSamplesJoinsTheExchangeWithNothing) {
  expect_global_batch_norm<torch::nn::BatchNorm2d, SyncableBatchNorm2d>({6, 2, 3, 3}, 6);
}

// Without synchronisation two ranks' batch norm sees half batches and trains another model; with
// it, the run is one process's on the global batch.
TEST(TwoRanksSyncBatchNorm, ATrainingRunMatchesOneProcessWithTheGlobalBatch) {
  const std::vector<std::string> batch_norm{"model.norm=batch", "train.epochs=1"};
  auto with = batch_norm, without = batch_norm;
  with.push_back("model.sync_batch_norm=true");
  Trainer synced(run("sync-bn", with), test_support::quiet_trainer());
  synced.fit();
  Trainer local(run("local-bn", without), test_support::quiet_trainer());
  local.fit();
  const auto mine = flat_parameters(synced);
  EXPECT_TRUE(at::equal(mine, from_rank0(mine))) << "the ranks' parameters drifted apart";
  if (my_rank() == 0) {
    as_plain_process([&] {
      fs::remove_all(scratch("sync-bn-single"));
      with.push_back("train.batch_size=16");
      Trainer single(run("sync-bn-single", with, /*fresh=*/false), test_support::quiet_trainer());
      single.fit();
      expect_close(mine, flat_parameters(single), "parameters against one process");
      EXPECT_FALSE(at::allclose(flat_parameters(local), flat_parameters(single), 1e-5, 1e-6))
          << "unsynchronised batch norm should train another model: the comparison tells nothing";
      for (const auto& [name, tensor] : single.model().named_state())
        if (name.find("running_") != std::string::npos)
          for (const auto& [other, two_rank] : synced.model().named_state())
            if (other == name) expect_close(two_rank, tensor, name);
    });
  }
  barrier();
}

// A rank whose shard is through joins the other's last step with an empty batch, and with
// gradient accumulation one whose share ran out joins the last forward pass with no samples: the
// exchanges still pair up (no hang, no mismatched collective) and the ranks stay identical.
TEST(TwoRanksSyncBatchNorm, UnevenSharesJoinTheOtherRanksForwardPassesEmptily) {
  const auto dir = scratch("sync-bn-csv");
  if (my_rank() == 0) {
    fs::create_directories(dir);
    std::ofstream csv(dir / "rows.csv");
    csv << "x,y,label\n";
    for (int i = 0; i < 91; ++i) csv << (i % 7) * 0.1 << "," << (i % 5) * 0.3 << "," << i % 3 << "\n";
  }
  barrier();
  for (const std::string accumulate : {"1", "2"}) {
    // 91 samples: 46 and 45. Batches of 9: rank 1 joins a sixth step with no batch. Micro-batches
    // of 5, two to a step: rank 0's last step runs 5 + 1 samples, rank 1's 5 and an empty pass.
    const std::string batch = accumulate == "1" ? "9" : "5";
    Trainer trainer(
        run("sync-bn-uneven-" + accumulate, {"data.source=csv", "data.path=" + (dir / "rows.csv").string(), "data.labels=label",
                                             "data.val_samples=0", "checkpoint.best_metric=none", "model.norm=batch",
                                             "model.sync_batch_norm=true", "train.batch_size=" + batch, "train.grad_accum=" + accumulate}),
        test_support::quiet_trainer());
    const auto result = trainer.fit();
    EXPECT_EQ(result.samples, my_rank() == 0 ? 92 : 90) << "grad_accum " << accumulate;
    const auto mine = flat_parameters(trainer);
    EXPECT_TRUE(at::equal(mine, from_rank0(mine))) << "grad_accum " << accumulate << ": the ranks' parameters drifted apart";
    EXPECT_TRUE(at::isfinite(mine).all().item<bool>());
  }
  barrier();
}

// Both layer features at once: recomputed blocks exchange their statistics again in backward, and
// the run stays the one without recomputation, bit for bit.
TEST(TwoRanksSyncBatchNorm, RecomputedBlocksExchangeAgainAndTrainTheSameWeights) {
  const std::vector<std::string> resnet{
      "model.name=resnet18", "data.shape=[3, 8, 8]",        "data.samples=32",           "data.val_samples=0", "train.epochs=1",
      "train.batch_size=4",  "checkpoint.best_metric=none", "model.sync_batch_norm=true"};
  auto recomputing = resnet;
  recomputing.push_back("train.activation_checkpointing=true");
  Trainer plain(run("sync-bn-resnet", resnet), test_support::quiet_trainer());
  plain.fit();
  Trainer recomputed(run("sync-bn-resnet-recompute", recomputing), test_support::quiet_trainer());
  recomputed.fit();
  const auto mine = flat_parameters(recomputed);
  EXPECT_TRUE(at::equal(mine, from_rank0(mine))) << "the ranks' parameters drifted apart";
  EXPECT_TRUE(at::equal(mine, flat_parameters(plain))) << "max difference " << (mine - flat_parameters(plain)).abs().max().item<float>();
  barrier();
}
