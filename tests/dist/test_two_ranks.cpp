// Data-parallel training with two real ranks: this binary runs under `mpirun -np 2` (ctest does
// it), every rank runs every test, and the ranks compare notes over their own MPI communicator
// between runs. CPU ranks and MPI here; the GPU path (NCCL) shares everything but the engine.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "gputrain/core/stop_signal.hpp"
#include "gputrain/data/batch.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/dist/rank_environment.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/two_ranks.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;
using namespace two_ranks;

// With class weights: their mean over samples (not over the batch's summed weights) is what makes
// two ranks' halves add up to the global batch's gradient.
TEST(TwoRanks, StayIdenticalAndMatchOneProcessWithTheGlobalBatch) {
  const auto config = run("match", {"train.class_weights=[1, 2.5, 0.5]"});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.world_size, 2);
  EXPECT_EQ(result.steps, 2 * 6);  // 96 samples / (2 ranks x 8) per epoch
  EXPECT_EQ(result.samples, 96);   // this rank's half of 2 epochs
  EXPECT_GT(result.buckets_sent_in_backward, 0);
  const auto mine = flat_parameters(trainer);
  EXPECT_TRUE(at::equal(mine, from_rank0(mine))) << "the ranks' parameters drifted apart";

  if (my_rank() == 0) {
    as_plain_process([&] {
      fs::remove_all(scratch("match-single"));
      Trainer single(run("match-single", {"train.batch_size=16", "train.class_weights=[1, 2.5, 0.5]"}, /*fresh=*/false),
                     test_support::quiet_trainer());
      const auto single_result = single.fit();
      EXPECT_EQ(single_result.world_size, 1);
      EXPECT_EQ(single_result.steps, result.steps);
      EXPECT_TRUE(at::allclose(mine, flat_parameters(single), 1e-5, 1e-6))
          << "max difference " << (mine - flat_parameters(single)).abs().max().item<float>();
      ASSERT_TRUE(result.last_epoch && single_result.last_epoch);
      EXPECT_NEAR(*result.last_epoch->val_loss, *single_result.last_epoch->val_loss, 1e-5);
      // Each rank validates its share; the per-class counts are summed over ranks before dividing.
      EXPECT_EQ(result.last_epoch->val_accuracy, single_result.last_epoch->val_accuracy);
      EXPECT_EQ(result.last_epoch->val_balanced_accuracy, single_result.last_epoch->val_balanced_accuracy);
      EXPECT_NE(result.last_epoch->val_balanced_accuracy, result.last_epoch->val_accuracy) << "the two figures are told apart";
      // Each rank counted its own share of the samples: the sums are the single process's counts.
      EXPECT_EQ(result.last_epoch->val_class_samples, single_result.last_epoch->val_class_samples);
      EXPECT_EQ(result.last_epoch->val_class_right, single_result.last_epoch->val_class_right);
      EXPECT_EQ(result.last_epoch->val_class_predicted, single_result.last_epoch->val_class_predicted);
    });
  }
  barrier();
}

// `train --evaluate` under a launcher: each rank measures every other validation sample, and the
// sums are the figures the run's own last epoch reported on the same weights.
TEST(TwoRanks, AnEvaluationSumsBothRanksSharesToTheRunsOwnFigures) {
  const auto config = run("evaluate", {"train.class_weights=[1, 2.5, 0.5]"});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  barrier();  // rank 0 has written model.safetensors
  auto options = test_support::quiet_trainer();
  options.evaluate_only = true;
  Trainer evaluator(config, options);
  const auto evaluated = evaluator.evaluate((fs::path(config.logging.dir) / "model.safetensors").string());
  EXPECT_EQ(evaluated.rank, my_rank());
  EXPECT_EQ(evaluated.samples, 32) << "both ranks' shares";
  ASSERT_TRUE(result.last_epoch && evaluated.metrics.val_loss);
  EXPECT_NEAR(*evaluated.metrics.val_loss, *result.last_epoch->val_loss, 1e-9);
  EXPECT_EQ(evaluated.metrics.val_accuracy, result.last_epoch->val_accuracy);
  EXPECT_EQ(evaluated.metrics.val_class_samples, result.last_epoch->val_class_samples);
  EXPECT_EQ(evaluated.metrics.val_class_right, result.last_epoch->val_class_right);
  EXPECT_EQ(evaluated.metrics.val_class_predicted, result.last_epoch->val_class_predicted);
  barrier();
}

// Batch-norm running statistics follow each rank's own samples. Validation makes them rank 0's on
// every rank, so every rank validates the model rank 0 saves.
TEST(TwoRanks, ValidationUsesRankZerosBatchNormStatisticsOnEveryRank) {
  const auto config = run("batch-norm", {"model.norm=batch", "train.epochs=1"});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  ASSERT_TRUE(result.last_epoch && result.last_epoch->val_loss);
  std::map<std::string, at::Tensor> running;
  for (const auto& [name, tensor] : trainer.model().named_state())
    if (name.find("running_") != std::string::npos) running[name] = tensor.detach();
  ASSERT_FALSE(running.empty()) << "model.norm=batch made no batch-norm layer";
  for (const auto& [name, tensor] : running)
    EXPECT_TRUE(at::equal(tensor, from_rank0(tensor))) << name << ": the ranks validated with different statistics";

  if (my_rank() == 0) {  // the saved weights hold the statistics every rank validated with
    std::size_t compared = 0;
    for (const auto& [name, tensor] : data::read_safetensors(fs::path(config.logging.dir) / "model.safetensors"))
      if (running.count(name)) compared += at::equal(tensor, running[name]) ? 1 : 0;
    EXPECT_EQ(compared, running.size());
  }
  barrier();
}

TEST(TwoRanks, OnlyRankZeroWritesTheRunDirectory) {
  const auto config = run("writer", {"checkpoint.every_steps=4", "checkpoint.every_epochs=0"});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  barrier();
  const fs::path dir(config.logging.dir);
  EXPECT_EQ(result.weights_path.empty(), my_rank() != 0);
  // Written once, by rank 0: a second writer would double every record.
  EXPECT_EQ(test_support::jsonl_records(dir / "metrics.jsonl", "start").size(), 1U);
  EXPECT_EQ(test_support::jsonl_records(dir / "metrics.jsonl", "step").size(), 12U);
  EXPECT_EQ(test_support::jsonl_records(dir / "metrics.jsonl", "start").front()["world_size"], 2);
  std::vector<std::string> checkpoints;
  for (const auto& e : fs::directory_iterator(dir / "checkpoints")) checkpoints.push_back(e.path().filename().string());
  std::sort(checkpoints.begin(), checkpoints.end());
  EXPECT_EQ(checkpoints, (std::vector<std::string>{"best.pt", "step-00000004.pt", "step-00000008.pt", "step-00000012.pt"}));
  barrier();
}

// report.json has each rank's figures (gathered to rank 0, which writes it) and the scaling estimate.
TEST(TwoRanks, TheReportHasEachRanksFiguresAndTheScalingEfficiency) {
  const auto config = run("report", {});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  const auto samples = peers().all_gather({result.samples}, "the test's sample counts");
  if (my_rank() == 0) {
    std::ifstream in(fs::path(config.logging.dir) / "report.json");
    const auto report = nlohmann::json::parse(in);
    ASSERT_EQ(report["ranks"].size(), 2U);
    for (int rank = 0; rank < 2; ++rank) {
      const auto& figures = report["ranks"][rank];
      EXPECT_EQ(figures["rank"], rank);
      EXPECT_EQ(figures["samples"], samples[static_cast<std::size_t>(rank)]);
      EXPECT_GT(figures["step_seconds"].get<double>(), 0);
      EXPECT_GE(figures["gradient_wait_seconds"].get<double>(), 0);
      EXPECT_LE(figures["gradient_wait_seconds"].get<double>() + figures["agreement_seconds"].get<double>(),
                figures["step_seconds"].get<double>());
    }
    EXPECT_DOUBLE_EQ(report["ranks"][0]["gradient_wait_seconds"].get<double>(), result.gradient_wait_seconds);
    const double efficiency = report["scaling_efficiency"].get<double>();
    EXPECT_GT(efficiency, 0);
    EXPECT_LE(efficiency, 1);
  }
  barrier();
}

TEST(TwoRanks, EverySampleIsSeenExactlyOncePerEpochEvenWithUnevenShards) {
  // 91 samples: rank 0 holds 46, rank 1 45; batches of 9 make rank 0 take a sixth step that
  // rank 1 joins with no samples. Feature 0 of each CSV row is its index.
  const auto dir = scratch("csv");
  if (my_rank() == 0) {
    fs::create_directories(dir);
    std::ofstream csv(dir / "rows.csv");
    csv << "index,x,label\n";
    for (int i = 0; i < 91; ++i) csv << i << "," << (i % 7) * 0.1 << "," << i % 3 << "\n";
  }
  barrier();
  auto config = run("coverage", {"data.source=csv", "data.path=" + (dir / "rows.csv").string(), "data.labels=label", "train.batch_size=9",
                                 "train.epochs=2", "data.val_samples=0", "checkpoint.best_metric=none"});
  auto seen = at::zeros({2, 91}, at::kFloat);  // per epoch
  const std::int64_t steps_per_epoch = 6;
  std::int64_t epoch = 0;
  auto options = test_support::quiet_trainer();
  options.on_batch = [&](const data::Batch& batch) {
    const auto index = batch.inputs.select(1, 0).to(at::kLong);
    seen[epoch].index_add_(0, index, at::ones({index.size(0)}));
  };
  options.after_step = [&](std::int64_t step) {
    if (step % steps_per_epoch == 0) ++epoch;
  };
  Trainer trainer(config, options);
  const auto result = trainer.fit();
  EXPECT_EQ(result.steps, 12);
  EXPECT_EQ(result.samples, my_rank() == 0 ? 92 : 90);
  peers().all_reduce_sum(seen, "the test's coverage sum")->wait();
  EXPECT_TRUE(at::equal(seen, at::ones_like(seen))) << seen;
  barrier();
}

// Each rank reads the data itself: ranks that read different data (a table changed between their
// reads, per-node copies that differ) would shard it so that samples are skipped and repeated.
TEST(TwoRanks, RanksThatReadDifferentDataAreRefusedBeforeTraining) {
  const auto dir = scratch("csv-differs");
  if (my_rank() == 0) {
    fs::create_directories(dir);
    for (const int rows : {40, 41}) {
      std::ofstream csv(dir / ("rows-" + std::to_string(rows) + ".csv"));
      csv << "x,label\n";
      for (int i = 0; i < rows; ++i) csv << i * 0.1 << "," << i % 2 << "\n";
    }
    std::ofstream reversed(dir / "rows-40-reversed.csv");  // the same rows in another order (ORDER BY random())
    reversed << "x,label\n";
    for (int i = 39; i >= 0; --i) reversed << i * 0.1 << "," << i % 2 << "\n";
  }
  barrier();
  const auto refusal = [&](const std::string& other) {
    const auto mine = dir / (my_rank() == 0 ? "rows-40.csv" : other);
    const auto config = run("differs", {"data.source=csv", "data.path=" + mine.string(), "data.labels=label", "data.val_samples=0"});
    try {
      Trainer trainer(config, test_support::quiet_trainer());
      ADD_FAILURE() << "the ranks trained on different data";
    } catch (const UsageError& e) {
      EXPECT_NE(e.remedy().find("data.path must be one shared file"), std::string::npos) << e.remedy();
      return std::string(e.what());
    }
    return std::string();
  };
  const auto count = refusal("rows-41.csv");
  EXPECT_NE(count.find("the ranks read different data (training samples: rank 0 read 40, rank 1 41), so their shards would skip and "
                       "repeat samples"),
            std::string::npos)
      << count;
  const auto order = refusal("rows-40-reversed.csv");
  EXPECT_NE(order.find("(64 training samples compared in order: rank 0's and rank 1's differ, with as many samples)"), std::string::npos)
      << order;
  barrier();
}

TEST(TwoRanks, AStopOnOneRankStopsBothAndTheResumeContinuesExactly) {
  Trainer reference(run("reference", {}), test_support::quiet_trainer());
  reference.fit();
  const auto expected = flat_parameters(reference);

  const auto config = run("stopped", {});
  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t step) {
    if (step == 3 && my_rank() == 1) core::request_stop();  // as a SIGTERM to rank 1 alone
  };
  {
    Trainer first(config, options);
    const auto stopped = first.fit();
    core::clear_stop_request();
    EXPECT_TRUE(stopped.interrupted);
    EXPECT_EQ(stopped.steps, 3);  // both stopped before step 4
  }
  barrier();
  Trainer resumed(run("stopped", {}, /*fresh=*/false), test_support::quiet_trainer());
  const auto result = resumed.fit();
  EXPECT_EQ(result.start_step, 3);
  EXPECT_EQ(result.steps, 12);
  EXPECT_TRUE(at::equal(flat_parameters(resumed), expected)) << "the resumed run left the uninterrupted one's path";
  barrier();
}

// train.max_time ends both ranks when the first rank's clock is up. Rank 0 starts 0.6 s after
// rank 1 here, so its own clock is short of the limit then: the checkpoint it writes must still
// say the time is used up, or the same command would train one more step. A checkpoint every
// step means the last step is always saved before the ranks agree the time is up (as at an
// epoch's end), so the end's checkpoint rewrites it with the whole budget.
TEST(TwoRanks, TheCheckpointOfARunEndedByTheTimeLimitRecordsAllOfIt) {
  const auto config = run("time-limit", {"train.max_time=1s", "train.epochs=100000", "checkpoint.every_steps=1"});
  Trainer trainer(config, test_support::quiet_trainer());
  if (my_rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const auto result = trainer.fit();
  EXPECT_TRUE(result.time_limit_reached);
  if (my_rank() == 0) {  // rank 0 writes the checkpoints
    const auto progress = load_checkpoint_weights(result.last_checkpoint, trainer.model(), c10::Device(c10::kCPU));
    EXPECT_GE(progress.trained_seconds, 1.0) << "rank 0 trained " << result.trained_seconds << " s by its own clock";
  }
  barrier();
}

// 97 samples: rank 1's 48 are 6 batches of 8, rank 0's 49 need a seventh step. A stop after step 6
// leaves epoch 1 over on rank 1 alone: neither rank may validate it then (validation is a
// collective), and the resume must finish it on both, validating it once, to the same weights.
TEST(TwoRanks, AStopWhereOneRanksShardIsThroughResumesToTheUninterruptedWeights) {
  const std::vector<std::string> uneven{"data.samples=97"};
  Trainer reference(run("uneven-reference", uneven), test_support::quiet_trainer());
  const auto whole = reference.fit();
  const auto expected = flat_parameters(reference);

  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t step) {
    if (step == 6) core::request_stop();
  };
  {
    Trainer first(run("uneven-stopped", uneven), options);
    const auto stopped = first.fit();
    core::clear_stop_request();
    EXPECT_TRUE(stopped.interrupted);
    EXPECT_EQ(stopped.steps, 6);
    EXPECT_FALSE(stopped.last_epoch) << "epoch 1 was validated with a sample of rank 0's shard left";
  }
  barrier();
  Trainer resumed(run("uneven-stopped", uneven, /*fresh=*/false), test_support::quiet_trainer());
  const auto result = resumed.fit();
  EXPECT_EQ(result.start_step, 6);
  EXPECT_EQ(result.steps, whole.steps);
  EXPECT_EQ(result.epochs_done, whole.epochs_done);
  EXPECT_TRUE(at::equal(flat_parameters(resumed), expected)) << "the resumed run left the uninterrupted one's path";
  barrier();
}

// Fewer GPUs after a preemption: the same global batch on one process continues the two ranks' run
// (each rank's place in the epoch is rescaled to the new share).
// One sample for two ranks: rank 1 trains on none, joins every step with an empty batch, and the
// run says so instead of calling the batch larger than each rank's one sample.
TEST(TwoRanks, MoreRanksThanSamplesTrainWithTheRankWithoutDataJoiningEachStep) {
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  auto config = run("fewer-samples", {"data.samples=1", "data.val_samples=0", "checkpoint.best_metric=none", "train.epochs=2"});
  config.logging.progress = "lines";
  Trainer trainer(config, options);
  const auto result = trainer.fit();
  EXPECT_EQ(result.steps, 2);
  EXPECT_EQ(result.samples, my_rank() == 0 ? 2 : 0);
  if (my_rank() == 0) {
    EXPECT_NE(console.str().find("2 ranks share 1 training sample: 1 rank trains on none, joining each step with an empty batch"),
              std::string::npos)
        << console.str();
  }
  barrier();
}

// 97 samples: rank 0's 49 end on a pass of one in batches of 8, which batch norm cannot take;
// rank 0 leaves it out, rank 1's 48 divide evenly, and both step alike.
TEST(TwoRanks, AShareEndingOnOneSampleLeavesItOutAndTheRanksStepAlike) {
  auto config = run("lone-sample", {"data.samples=97", "model.norm=batch", "checkpoint.best_metric=none"});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.total_steps, 12);
  EXPECT_EQ(result.steps, 12);
  EXPECT_EQ(result.samples, 2 * 48);  // rank 0: 49 less the one left out; rank 1: 48
  barrier();
}

TEST(TwoRanks, AStoppedRunResumesOnOneProcessWithTheSameGlobalBatch) {
  Trainer reference(run("regrouped-reference", {}), test_support::quiet_trainer());
  reference.fit();
  const auto expected = flat_parameters(reference);

  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t step) {
    if (step == 3) core::request_stop();
  };
  {
    Trainer first(run("regrouped", {}), options);
    EXPECT_TRUE(first.fit().interrupted);
    core::clear_stop_request();
  }
  barrier();
  if (my_rank() == 0) {
    as_plain_process([&] {
      std::ostringstream console;
      auto one = test_support::quiet_trainer();
      one.console = &console;
      auto config = run("regrouped", {"train.batch_size=16"}, /*fresh=*/false);
      config.logging.progress = "lines";
      Trainer resumed(config, one);
      const auto result = resumed.fit();
      EXPECT_EQ(result.world_size, 1);
      EXPECT_EQ(result.start_step, 3);
      EXPECT_EQ(result.steps, 12);
      EXPECT_NE(console.str().find("resuming on 1 rank a run written by 2 ranks, with the same global batch: each rank continues at "
                                   "sample 48 of its share of epoch 1"),
                std::string::npos)
          << console.str();
      EXPECT_EQ(result.samples, 192 - 48);  // the rest of the two epochs, nothing seen twice
      EXPECT_TRUE(at::allclose(flat_parameters(resumed), expected, 1e-5, 1e-6))
          << "max difference " << (flat_parameters(resumed) - expected).abs().max().item<float>();
    });
  }
  barrier();
}

TEST(TwoRanks, AnOomOnOneRankHalvesTheMicroBatchOnBothWithoutDeadlock) {
  memory::set_cpu_memory_cap(0);
  // As in tests/unit/train/test_oom_recovery.cpp: activations outweigh the parameters.
  const std::vector<std::string> big{
      "model.hidden=[128, 128]",     "data.shape=[64]", "data.classes=4",       "data.samples=2048", "data.val_samples=0",
      "checkpoint.best_metric=none", "train.epochs=2",  "train.batch_size=256", "optimizer.lr=0.05", "logging.tensorboard=false"};
  // The step's peak above its boundary at 256 and at 128 per rank, measured on this rank.
  auto peak_of = [&](std::int64_t batch) {
    std::uint64_t boundary = 0, peak = 0;
    auto options = test_support::quiet_trainer();
    options.after_step = [&](std::int64_t step) {
      if (step == 1) boundary = memory::cpu_memory_stats().allocated, memory::reset_cpu_peak();
      if (step == 2) peak = memory::cpu_memory_stats().peak;
    };
    auto overrides = big;
    overrides.push_back("train.max_steps=3");
    overrides.push_back("train.batch_size=" + std::to_string(batch));
    Trainer probe(run("oom-peak", overrides), options);
    probe.fit();
    return peak - boundary;
  };
  const auto full = peak_of(256), half = peak_of(128);
  ASSERT_GT(full, half);

  Trainer reference(run("oom-reference", big), test_support::quiet_trainer());
  reference.fit();
  const auto expected = flat_parameters(reference);

  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t step) {
    if (step == 3 && my_rank() == 1) memory::set_cpu_memory_cap(memory::cpu_memory_stats().allocated + (full + half) / 2);
  };
  Trainer capped(run("oom-capped", big), options);
  const auto result = capped.fit();
  memory::set_cpu_memory_cap(0);
  EXPECT_EQ(result.steps, 8);
  EXPECT_EQ(result.oom_events, my_rank() == 1 ? 1 : 0);
  EXPECT_EQ(result.micro_batch, 128) << "rank " << my_rank() << " did not follow the halving";
  EXPECT_TRUE(at::allclose(flat_parameters(capped), expected, 1e-4, 1e-6));
  barrier();
}

TEST(TwoRanks, Bf16AndFp16GradientsOnTheWireStayCloseAndIdenticalAcrossRanks) {
  Trainer full(run("wire-fp32", {}), test_support::quiet_trainer());
  full.fit();
  const auto expected = flat_parameters(full);
  for (const char* dtype : {"bf16", "fp16"}) {
    SCOPED_TRACE(dtype);
    Trainer compressed(run(std::string("wire-") + dtype, {std::string("distributed.grad_dtype=") + dtype}), test_support::quiet_trainer());
    compressed.fit();
    const auto mine = flat_parameters(compressed);
    EXPECT_TRUE(at::equal(mine, from_rank0(mine))) << "the ranks' parameters drifted apart";
    // 12 SGD steps on gradients rounded to 8 (bf16) or 11 (fp16) bits: close, not equal.
    EXPECT_TRUE(at::allclose(mine, expected, 2e-2, 2e-3)) << "max difference " << (mine - expected).abs().max().item<float>();
    EXPECT_FALSE(at::equal(mine, expected)) << "the gradients were not compressed";
  }
  barrier();
}

// bf16-mixed steps cast the MLP's weights in one copy per gradient bucket each way
// (weight_casts.hpp): the ranks stay identical, train as with autocast's casts per layer, bit for
// bit, and send as many buckets during backward.
TEST(TwoRanks, BatchedWeightCastsTrainAsAutocastsOwnCastsAcrossRanks) {
  const std::vector<std::string> settings{"train.precision=bf16-mixed", "model.hidden=[64, 64, 64]", "distributed.bucket_mb=0.001",
                                          "distributed.first_bucket_mb=0.001"};
  setenv("GPUTRAIN_WEIGHT_CASTS", "per-layer", 1);
  Trainer per_layer(run("casts-per-layer", settings), test_support::quiet_trainer());
  const auto a = per_layer.fit();
  unsetenv("GPUTRAIN_WEIGHT_CASTS");
  Trainer batched(run("casts-batched", settings), test_support::quiet_trainer());
  const auto b = batched.fit();
  const auto mine = flat_parameters(batched);
  EXPECT_TRUE(at::equal(mine, from_rank0(mine))) << "the ranks' parameters drifted apart";
  EXPECT_TRUE(at::equal(mine, flat_parameters(per_layer)));
  EXPECT_GT(a.gradient_buckets, 2);
  EXPECT_EQ(b.buckets_sent_in_backward, a.buckets_sent_in_backward);
  barrier();
}

// Last: it leaves rank 0's collective to be completed late by rank 1.
TEST(TwoRanks, ACollectiveAPeerNeverJoinsFailsWithinTheTimeoutNamingRankAndOperation) {
  const auto env = dist::read_rank_environment();
  auto quick = dist::connect(*env, dist::CommunicatorOptions{dist::Backend::mpi, c10::Device(c10::kCPU), std::chrono::seconds(2)});
  const auto start = std::chrono::steady_clock::now();
  if (my_rank() == 0) {
    try {
      quick->all_gather({1}, "the agreement before step 18");
      FAIL() << "a collective rank 1 never joined returned";
    } catch (const dist::CommunicationError& e) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_GE(seconds, 2.0);
      EXPECT_LT(seconds, 5.0);
      EXPECT_NE(std::string(e.what()).find("rank 0: the agreement before step 18 did not finish within 2 s"), std::string::npos)
          << e.what();
    }
    // MPI cannot cancel the call: the communicator leaves it running rather than wait on it, so
    // the error reaches the caller (whose end_failed_run stops the job) instead of a hang.
    const auto destroyed = std::chrono::steady_clock::now();
    quick.reset();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - destroyed).count(), 2.0)
        << "the communicator waited for a collective its peer had not joined";
  } else {
    std::this_thread::sleep_until(start + std::chrono::seconds(6));  // "hangs", then joins, so both processes can end
    quick->all_gather({1}, "the late join");
  }
  // Rank 0's call, left running, completes with the late join; MPI_Finalize waits for nothing then
  // (3 s for it, on a loaded machine: MPI's busy polling competes with the other tests for cores).
  std::this_thread::sleep_until(start + std::chrono::seconds(9));
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  peers();  // MPI up before the first test
  return RUN_ALL_TESTS();
}
