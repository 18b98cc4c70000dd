// CUDA-graph steps (train.cuda_graphs) on a GPU: a graph run repeats the eager run bit for bit in
// deterministic mode, step by step, recomputed blocks too; fp16's skipped steps happen inside the
// graph; a graph run's checkpoint resumes exactly; a new micro-batch (an OOM split) is captured
// anew; and where capture cannot work the run says why. Skipped without a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/data/batch.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/train/callback.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

namespace {

// A small CNN on 32x32 images with the crop and flip (random ops inside the graph), deterministic.
// 320 samples at batch 64: 5 steps an epoch, 3 eager, a capture, a replay; 3 epochs.
Config graph_run(const std::string& name, const std::string& graphs, std::vector<std::string> overrides = {}) {
  const auto dir = fs::temp_directory_path() / ("gputrain-gpu-graphs-" + name + "-" + graphs);
  fs::remove_all(dir);
  std::vector<std::string> all{"model.name=small_cnn",
                               "data.shape=[3, 32, 32]",
                               "data.samples=320",
                               "data.val_samples=64",
                               "data.crop_padding=4",
                               "data.hflip=true",
                               "train.epochs=3",
                               "train.batch_size=64",
                               "train.deterministic=true",
                               "train.precision=bf16-mixed",
                               "device=cuda",
                               "logging.progress=off",
                               "logging.every_steps=1",
                               "train.cuda_graphs=" + graphs,
                               "logging.dir=" + dir.string()};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_config({{}, all, ""});
}

// Each step line's loss; a non-finite one (a skipped fp16 step) is null in metrics.jsonl.
std::vector<std::optional<double>> step_losses(const FitResult& result) {
  std::vector<std::optional<double>> out;
  for (const auto& record : test_support::jsonl_records(result.run_dir + "/metrics.jsonl", "step"))
    out.push_back(record["loss"].is_null() ? std::nullopt : std::optional<double>(record["loss"].get<double>()));
  return out;
}

std::string graphs_said(const FitResult& result) {
  return test_support::jsonl_records(result.run_dir + "/metrics.jsonl", "start").front()["cuda_graphs"];
}

// Bit for bit, NaN for NaN: an fp16 step on inf inputs leaves NaN in batch norm's running
// statistics in both runs (the forward ran; only the optimizer step is skipped).
void expect_same_weights(Trainer& a, Trainer& b) {
  const auto x = a.model().named_state(), y = b.model().named_state();
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_TRUE(at::isclose(x[i].second, y[i].second, 0, 0, /*equal_nan=*/true).all().item<bool>()) << x[i].first << " differs";
}

// Asks for eager steps, as a callback that freezes layers between steps would.
class Unfreezer final : public Callback {
 public:
  std::string name() const override { return "unfreezer"; }
  bool needs_eager_steps() const override { return true; }
};

}  // namespace

class GpuGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible";
  }
};

TEST_F(GpuGraphs, AGraphRunRepeatsTheEagerRunBitForBit) {
  for (const char* precision : {"bf16-mixed", "fp32"}) {
    // 300 samples: four steps of 64 and a partial one of 44 an epoch, which runs eagerly in the
    // captured step's memory pool from the first epoch's capture on.
    const std::vector<std::string> settings{std::string("train.precision=") + precision,
                                            "data.samples=300",
                                            "train.clip_grad_norm=1.0",
                                            "optimizer.name=sgd",
                                            "optimizer.momentum=0.9",
                                            "optimizer.nesterov=true",
                                            "scheduler.name=onecycle"};
    Trainer eager(graph_run("equal", "off", settings), test_support::quiet_trainer());
    Trainer graphs(graph_run("equal", "on", settings), test_support::quiet_trainer());
    const auto a = eager.fit(), b = graphs.fit();
    EXPECT_EQ(graphs_said(b), "on");
    EXPECT_EQ(step_losses(a), step_losses(b)) << precision;
    expect_same_weights(eager, graphs);
  }
}

// logging.grad_norm without clipping, in bf16 and fp32: the graph holds its applied gradients and
// a logged step measures them after its replay (the steps between measure nothing), which gives
// the eager run's norms bit for bit.
TEST_F(GpuGraphs, LoggedGradientNormsRepeatTheEagerRunsWithoutANormEveryReplay) {
  for (const char* precision : {"bf16-mixed", "fp32"}) {
    const std::vector<std::string> settings{std::string("train.precision=") + precision, "logging.grad_norm=true", "logging.every_steps=2"};
    Trainer eager(graph_run("norms", "off", settings), test_support::quiet_trainer());
    Trainer graphs(graph_run("norms", "on", settings), test_support::quiet_trainer());
    const auto a = eager.fit(), b = graphs.fit();
    EXPECT_EQ(graphs_said(b), "on");
    const auto norms = [](const FitResult& r) {
      std::vector<double> out;
      for (const auto& record : test_support::jsonl_records(r.run_dir + "/metrics.jsonl", "step"))
        if (!record["grad_norm"].is_null()) out.push_back(record["grad_norm"].get<double>());
      return out;
    };
    EXPECT_FALSE(norms(a).empty());
    EXPECT_EQ(norms(a), norms(b)) << precision;
  }
}

// ResNet blocks that recompute in backward (train.activation_checkpointing) rewind no generator,
// so the whole step, recomputation included, is captured and repeats the eager run bit for bit.
TEST_F(GpuGraphs, RecomputingResNetBlocksAreCapturedAndRepeatTheEagerRun) {
  const std::vector<std::string> settings{"model.name=resnet18", "train.activation_checkpointing=[layer2, layer4]"};
  Trainer eager(graph_run("recompute", "off", settings), test_support::quiet_trainer());
  Trainer graphs(graph_run("recompute", "on", settings), test_support::quiet_trainer());
  const auto a = eager.fit(), b = graphs.fit();
  EXPECT_EQ(graphs_said(b), "on");
  EXPECT_EQ(step_losses(a), step_losses(b));
  expect_same_weights(eager, graphs);
}

// The built-in models' weights cast for autocast in one copy each way (weight_casts.hpp), captured
// in the graph, train as autocast's own casts per layer do, bit for bit, on cuDNN and cuBLAS.
TEST_F(GpuGraphs, BatchedWeightCastsTrainAsAutocastsPerLayerCastsBitForBit) {
  const std::vector<std::string> settings{"model.name=resnet18", "train.channels_last=true"};
  setenv("GPUTRAIN_WEIGHT_CASTS", "per-layer", 1);
  Trainer per_layer(graph_run("casts-per-layer", "on", settings), test_support::quiet_trainer());
  const auto a = per_layer.fit();
  unsetenv("GPUTRAIN_WEIGHT_CASTS");
  Trainer batched(graph_run("casts-batched", "on", settings), test_support::quiet_trainer());
  const auto b = batched.fit();
  EXPECT_EQ(graphs_said(a), "on");
  EXPECT_EQ(graphs_said(b), "on");
  EXPECT_EQ(step_losses(a), step_losses(b));
  expect_same_weights(per_layer, batched);
}

// An inf in one batch's inputs makes every gradient inf: fp16's GradScaler skips that step inside
// the graph (no host check), as the eager step does, and backs off its scale.
TEST_F(GpuGraphs, Fp16SkipsAnInfStepInsideTheGraph) {
  FitResult results[2];
  std::unique_ptr<Trainer> trainers[2];
  for (int graphs = 0; graphs < 2; ++graphs) {
    auto options = test_support::quiet_trainer();
    int batches = 0;
    options.on_batch = [&batches](const data::Batch& batch) {
      if (++batches == 7) batch.inputs.fill_(std::numeric_limits<float>::infinity());  // step 7: a replayed one
    };
    // Synthetic samples are float32, which holds the inf.
    trainers[graphs] = std::make_unique<Trainer>(graph_run("fp16-inf", graphs ? "on" : "off", {"train.precision=fp16-mixed"}), options);
    results[graphs] = trainers[graphs]->fit();
    EXPECT_EQ(results[graphs].skipped_steps, 1) << (graphs ? "graphs" : "eager");
  }
  EXPECT_EQ(step_losses(results[0]), step_losses(results[1]));
  expect_same_weights(*trainers[0], *trainers[1]);
}

// A graph run stopped mid-epoch (after its graph was captured) and resumed ends exactly where an
// uninterrupted one does.
TEST_F(GpuGraphs, AGraphRunsCheckpointResumesExactly) {
  Trainer straight(graph_run("resume-straight", "on"), test_support::quiet_trainer());
  straight.fit();
  const auto config = graph_run("resume-stopped", "on");
  {
    core::clear_stop_request();
    auto options = test_support::quiet_trainer();
    options.after_step = [](std::int64_t step) {
      if (step == 7) core::request_stop();
    };
    Trainer first(config, options);
    EXPECT_TRUE(first.fit().interrupted);
    core::clear_stop_request();
  }
  Trainer second(config, test_support::quiet_trainer());
  EXPECT_EQ(second.fit().start_step, 7);
  expect_same_weights(straight, second);
}

// A real OOM before the capture (the memory fraction lowered during the warm-up steps): the guard
// splits the micro-batch, which warms up and is captured in turn, and the run trains every sample.
// A replay allocates nothing, so it is the warm-up or the capture that meets the cap.
TEST_F(GpuGraphs, AnOomSplitIsCapturedAtTheNewMicroBatch) {
  // fp32, as GpuTrainer.ARealCudaOomMidRunIsSurvived: bf16's smaller activations leave the cap
  // too little above the weights, optimizer state and cached data for any micro-batch to fit.
  const std::vector<std::string> big{
      "model.name=mlp",        "data.shape=[1024]",   "model.hidden=[4096, 4096]", "data.samples=16384",
      "data.val_samples=0",    "data.crop_padding=0", "data.hflip=false",          "checkpoint.best_metric=none",
      "train.batch_size=4096", "train.epochs=2",      "train.tf32=false",          "train.precision=fp32"};
  const c10::Device gpu(c10::kCUDA, 0);
  std::uint64_t peak = 0;
  {
    memory::reset_peak_memory(gpu);
    Trainer reference(graph_run("oom-reference", "off", big), test_support::quiet_trainer());
    reference.fit();
    peak = memory::memory_figures(gpu).peak;
  }
  memory::release_cached_memory(gpu);
  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t step) {
    if (step == 1) memory::cap_memory(gpu, peak * 7 / 8);  // 3/4 left no micro-batch room for a capture (H200)
  };
  // Halvings down to 256: on the H200 this test passed once with the default 3 and twice ran out
  // at 512 (515 MiB allocated beside the step, of the 674 allowed), so where the split ends
  // varies from run to run; that the micro-batch it ends at is captured is the point.
  auto capped_settings = big;
  capped_settings.emplace_back("oom.max_halvings=4");
  Trainer capped(graph_run("oom-capped", "on", capped_settings), options);
  const auto result = capped.fit();
  memory::cap_memory(gpu, 0);
  EXPECT_GE(result.oom_events, 1);
  EXPECT_LT(result.micro_batch, 4096);
  EXPECT_EQ(result.samples, 32768);  // 2 epochs of 16384
  std::ifstream log(fs::path(result.run_dir) / "training.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("cuda graphs: the step at micro-batch " + std::to_string(result.micro_batch) + " is captured"), std::string::npos)
      << text;
}

TEST_F(GpuGraphs, WhereCaptureCannotWorkTheRunSaysWhyOrRefuses) {
  auto options = test_support::quiet_trainer();
  options.callbacks.push_back(std::make_shared<Unfreezer>());
  Trainer fallback(graph_run("fallback", "auto", {"train.epochs=1"}), options);
  EXPECT_EQ(graphs_said(fallback.fit()), "off (callback 'unfreezer' needs eager steps)");
  EXPECT_THROW(Trainer(graph_run("refused", "on", {"train.epochs=1"}), options), UsageError);
}
