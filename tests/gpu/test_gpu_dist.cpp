// NCCL through c10d on the one GPU a machine may have: a world of size 1 runs the whole
// distributed path (TCPStore rendezvous, ProcessGroupNCCL, bucketed all-reduce from gradient
// hooks, step agreements) and must train exactly as a plain run does, with its all-reduces
// captured in the step's CUDA graph too. Skipped without a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "gputrain/dist/communicator.hpp"
#include "gputrain/dist/launcher.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/sync_batch_norm.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/tensor_checks.hpp"
#include "train/models/layers/sync_batch_norm.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;
using test_support::flat_parameters;

namespace {

Config nccl_run(const std::string& name, std::vector<std::string> overrides = {}) {
  const auto dir = fs::temp_directory_path() / ("gputrain-gpu-dist-" + name);
  fs::remove_all(dir);
  std::vector<std::string> all{"model.name=mlp",       "model.hidden=[256, 256]",    "model.dropout=0",      "data.shape=[64]",
                               "data.classes=4",       "data.samples=2048",          "data.val_samples=256", "train.epochs=2",
                               "train.batch_size=128", "train.deterministic=true",   "optimizer.name=sgd",   "device=cuda",
                               "logging.progress=off", "logging.dir=" + dir.string()};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_config({{}, all, ""});
}

// torchrun's variables for a world of one, removed again at the end of the scope.
struct WorldOfOne {
  WorldOfOne() {
    setenv("RANK", "0", 1);
    setenv("LOCAL_RANK", "0", 1);
    setenv("WORLD_SIZE", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "1", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(dist::free_local_port()).c_str(), 1);
  }
  ~WorldOfOne() {
    for (const char* n : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) unsetenv(n);
  }
};

}  // namespace

class GpuDist : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible";
  }
};

TEST_F(GpuDist, NcclWorldOfOneTrainsAsAPlainRunDoes) {
  Trainer plain(nccl_run("plain"), test_support::quiet_trainer());
  const auto expected = plain.fit();
  at::Tensor distributed_params;
  {
    WorldOfOne world;
    Trainer nccl(nccl_run("nccl", {"distributed.bucket_mb=0.1", "distributed.first_bucket_mb=0.05"}), test_support::quiet_trainer());
    const auto result = nccl.fit();
    EXPECT_EQ(result.world_size, 1);
    EXPECT_GT(result.gradient_buckets, 1);
    EXPECT_GT(result.buckets_sent_in_backward, 0);
    EXPECT_EQ(result.steps, expected.steps);
    distributed_params = flat_parameters(nccl);
  }
  EXPECT_TRUE(at::allclose(distributed_params, flat_parameters(plain), 1e-5, 1e-6))
      << "max difference " << (distributed_params - flat_parameters(plain)).abs().max().item<float>();
}

namespace {

// A distributed run on a world of one, eager and then with its steps captured: each run's step
// losses and final weights, which must match bit for bit, and the captured run's training.log.
struct GraphsOffAndOn {
  std::vector<std::vector<double>> losses;
  std::vector<at::Tensor> weights;
  std::string captured_log;
};

GraphsOffAndOn graphs_off_and_on(const std::string& name, std::vector<std::string> overrides) {
  GraphsOffAndOn runs;
  for (const std::string graphs : {"off", "on"}) {
    WorldOfOne world;
    auto all = overrides;
    all.insert(all.end(), {"logging.every_steps=1", "train.cuda_graphs=" + graphs});
    Trainer run(nccl_run(name + "-graphs-" + graphs, all), test_support::quiet_trainer());
    const auto result = run.fit();
    EXPECT_EQ(result.world_size, 1);
    const auto start = test_support::jsonl_records(result.run_dir + "/metrics.jsonl", "start").front();
    EXPECT_EQ(start["cuda_graphs"], graphs == "on" ? "on" : "off (train.cuda_graphs: off)");
    runs.losses.emplace_back();
    for (const auto& record : test_support::jsonl_records(result.run_dir + "/metrics.jsonl", "step"))
      runs.losses.back().push_back(record["loss"].get<double>());
    runs.weights.push_back(flat_parameters(run));
    if (graphs == "on") {
      std::ifstream log(fs::path(result.run_dir) / "training.log");
      runs.captured_log.assign(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
    }
  }
  EXPECT_EQ(runs.losses[0], runs.losses[1]);
  EXPECT_TRUE(at::equal(runs.weights[0], runs.weights[1]))
      << "max difference " << (runs.weights[0] - runs.weights[1]).abs().max().item<float>();
  return runs;
}

}  // namespace

// The all-reduces recorded inside the captured step (the hooks launch them during the captured
// backward; the optimizer reads the sums where they land) repeat the eager distributed run bit for
// bit; the epoch's last, partial batch (2000 = 15 x 128 + 80) runs eagerly between replays.
TEST_F(GpuDist, NcclAllReducesCapturedInTheStepsGraphRepeatTheEagerRun) {
  const auto runs = graphs_off_and_on("buckets", {"distributed.bucket_mb=0.1", "distributed.first_bucket_mb=0.05", "data.samples=2000"});
  EXPECT_NE(runs.captured_log.find("cuda graphs: the step at micro-batch 128 is captured"), std::string::npos) << runs.captured_log;
}

// model.sync_batch_norm's exchanges of statistics (forward) and gradient sums (backward) are
// NCCL all-reduces too: captured with the step, they repeat the eager run bit for bit, the last
// partial batch (456 = 7 x 64 + 8) eager between replays.
TEST_F(GpuDist, SyncBatchNormExchangesCapturedInTheStepsGraphRepeatTheEagerRun) {
  const auto runs =
      graphs_off_and_on("sync-bn", {"model.name=resnet18", "model.stem=cifar", "model.sync_batch_norm=true", "data.shape=[3, 16, 16]",
                                    "data.samples=456", "data.val_samples=64", "train.batch_size=64"});
  EXPECT_NE(runs.captured_log.find("cuda graphs: the step at micro-batch 64 is captured"), std::string::npos) << runs.captured_log;
}

TEST_F(GpuDist, NcclAllReduceSumsBf16Buckets) {
  WorldOfOne world;
  dist::RankEnvironment env{0, 0, 1, 1, "127.0.0.1", std::atoi(std::getenv("MASTER_PORT")), "torchrun"};
  auto comm = dist::connect(env, {dist::Backend::nccl, c10::Device(c10::kCUDA, 0), std::chrono::seconds(60)});
  auto t = at::arange(1000, at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16));
  const auto before = t.clone();
  comm->all_reduce_sum(t, "a test all-reduce")->wait();
  EXPECT_TRUE(at::equal(t, before));  // a world of one sums to itself
  const auto gathered = comm->all_gather({7, 9}, "a test all-gather");
  EXPECT_EQ(gathered, (std::vector<std::int64_t>{7, 9}));
  comm->graphs_hold_collectives();  // host values then go over Gloo
  EXPECT_EQ(comm->all_gather({7, 9}, "a test all-gather over Gloo"), (std::vector<std::int64_t>{7, 9}));
}

// model.sync_batch_norm's GPU path (ATen's SyncBatchNorm kernels, statistics over NCCL) on a
// world of one is torch::nn's BatchNorm: fp32 and bf16 inputs, channels_last, three passes.
TEST_F(GpuDist, SyncBatchNormKernelsOverNcclMatchTorchBatchNorm) {
  WorldOfOne world;
  dist::RankEnvironment env{0, 0, 1, 1, "127.0.0.1", std::atoi(std::getenv("MASTER_PORT")), "torchrun"};
  auto comm = dist::connect(env, {dist::Backend::nccl, c10::Device(c10::kCUDA, 0), std::chrono::seconds(60)});
  auto sync = std::make_shared<BatchNormSync>(*comm);
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    const double tolerance = dtype == at::kFloat ? 1e-4 : 3e-2;
    at::manual_seed(5);
    torch::nn::BatchNorm2d plain(16);
    SyncableBatchNorm2d synced(16);
    plain->to(at::kCUDA);
    synced->to(at::kCUDA);
    synced->synchronise_with(sync, "bn");
    const auto options = at::TensorOptions().device(at::kCUDA).dtype(dtype);
    const auto x = (at::randn({32, 16, 8, 8}, options) * 2 + 1).contiguous(at::MemoryFormat::ChannelsLast);
    const auto upstream = at::randn({32, 16, 8, 8}, options);
    for (int pass = 0; pass < 3; ++pass) {
      const auto a = x.clone().requires_grad_(true), b = x.clone().requires_grad_(true);
      const auto expected = plain->forward(a), out = synced->forward(b);
      (expected.to(at::kFloat) * upstream.to(at::kFloat)).sum().backward();
      (out.to(at::kFloat) * upstream.to(at::kFloat)).sum().backward();
      EXPECT_EQ(out.scalar_type(), dtype);
      EXPECT_TRUE(at::allclose(out.to(at::kFloat), expected.to(at::kFloat), tolerance, tolerance)) << dtype << " pass " << pass;
      EXPECT_TRUE(at::allclose(b.grad().to(at::kFloat), a.grad().to(at::kFloat), tolerance, tolerance)) << dtype << " pass " << pass;
      EXPECT_TRUE(at::allclose(synced->weight.grad(), plain->weight.grad(), tolerance, tolerance * 10)) << dtype << " pass " << pass;
      EXPECT_TRUE(at::allclose(synced->running_var, plain->running_var, 1e-4, 1e-4)) << dtype << " pass " << pass;
    }
  }
}
