// The trainer on a GPU: mixed precision, memory figures, resume, auto batch, OOM recovery.
// Skipped without a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "gputrain/core/stop_signal.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/train/batch_size.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/libtorch_transformer.hpp"
#include "support/quiet_trainer.hpp"
#include "train/models/builtin_models.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

namespace {

Config gpu_run(const std::string& name, std::vector<std::string> overrides) {
  const auto dir = fs::temp_directory_path() / ("gputrain-gpu-trainer-" + name);
  fs::remove_all(dir);
  std::vector<std::string> all{"model.name=resnet18",  "data.shape=[3, 32, 32]", "data.samples=512",           "data.val_samples=128",
                               "train.epochs=2",       "train.batch_size=64",    "train.channels_last=true",   "device=cuda",
                               "logging.progress=off", "logging.every_steps=4",  "logging.dir=" + dir.string()};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_config({{}, all, ""});
}

}  // namespace

class GpuTrainer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible";
  }
};

TEST_F(GpuTrainer, MixedPrecisionTrainsAndReportsMemory) {
  for (const char* precision : {"bf16-mixed", "fp16-mixed", "fp32"}) {
    Trainer trainer(gpu_run(std::string("amp-") + precision, {std::string("train.precision=") + precision}), test_support::quiet_trainer());
    EXPECT_EQ(trainer.device(), "cuda:0");
    const auto result = trainer.fit();
    EXPECT_EQ(result.steps, 16) << precision;
    EXPECT_LT(*result.last_loss, *result.first_loss) << precision;
    EXPECT_GT(result.samples_per_second, 0);
  }
}

// The transformer's attention on the GPU (scaled_dot_product_attention's fused kernels) computes
// what LibTorch's own encoder (bmm and softmax) does with the same weights, and a bf16 run learns.
TEST_F(GpuTrainer, TransformerMatchesLibTorchsEncoderAndTrainsInBf16) {
  at::manual_seed(5);
  ModelSpec spec;
  spec.config.name = "transformer";
  spec.config.d_model = 64;
  spec.config.heads = 4;
  spec.config.ff_dim = 96;
  spec.config.layers = 2;
  spec.config.dropout = 0.0;
  spec.input_shape = {48, 8};
  spec.outputs = 3;
  auto model = build_model(spec);
  auto reference = test_support::LibTorchTransformer(48, 8, 64, 4, 96, 2, 3);
  reference->copy_from(*model);
  const c10::Device cuda(c10::kCUDA, 0);
  model->to(cuda);
  reference->to(cuda);
  model->set_training(false);
  reference->eval();
  const auto x = at::randn({16, 48, 8}, at::TensorOptions().device(cuda));
  const auto ours = model->forward(x), theirs = reference->forward(x);
  EXPECT_TRUE(at::allclose(ours, theirs, 1e-3, 1e-4)) << (ours - theirs).abs().max().item<double>();
  // bf16 with dropout on a GPU: one of the fused kernels, not the written-out fallback.
  spec.config.dropout = 0.1;
  const auto note = models::transformer_attention_note(spec, cuda, Precision::bf16_mixed);
  EXPECT_EQ(note.find("math fallback"), std::string::npos) << note;
  EXPECT_EQ(note.find("could not be asked"), std::string::npos) << note;

  Trainer trainer(gpu_run("transformer-bf16", {"model.name=transformer", "data.shape=[64, 16]", "data.classes=4",
                                               "train.channels_last=false", "train.precision=bf16-mixed", "model.dropout=0.1"}),
                  test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.steps, 16);
  EXPECT_LT(*result.last_loss, *result.first_loss);
}

// The largest difference between two models' tensors, each relative to its tensor's largest value.
double largest_gap(Trainer& a, Trainer& b) {
  const auto x = a.model().named_state(), y = b.model().named_state();
  EXPECT_EQ(x.size(), y.size());
  double gap = 0;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    const auto p = x[i].second.to(at::kDouble), q = y[i].second.to(at::kDouble);
    gap = std::max(gap, ((p - q).abs().max() / (q.abs().max() + 1e-12)).item<double>());
  }
  return gap;
}

// A run stopped after step 6 and resumed, next to one that ran straight through.
double resume_gap(const std::string& name, const std::vector<std::string>& settings, Trainer& straight) {
  const auto config = gpu_run(name, settings);
  {
    core::clear_stop_request();
    auto options = test_support::quiet_trainer();
    options.after_step = [](std::int64_t step) {
      if (step == 6) core::request_stop();
    };
    Trainer first(config, options);
    EXPECT_TRUE(first.fit().interrupted);
    core::clear_stop_request();
  }
  Trainer second(config, test_support::quiet_trainer());
  EXPECT_EQ(second.fit().start_step, 6);
  return largest_gap(straight, second);
}

// In deterministic mode the GPU repeats itself exactly, so a resumed run must too: any gap is
// state the checkpoint lost (ResNet-18, channels_last, fp32).
TEST_F(GpuTrainer, ResumedRunEndsWhereAnUninterruptedOneDoesInDeterministicMode) {
  const std::vector<std::string> settings{"train.deterministic=true", "train.precision=fp32", "train.tf32=false"};
  Trainer straight(gpu_run("straight-deterministic", settings), test_support::quiet_trainer());
  straight.fit();
  const double gap = resume_gap("resumed-deterministic", settings, straight);
  std::cerr << "deterministic: resumed vs straight " << gap << "\n";
  EXPECT_LE(gap, 1e-6);
}

// With the fast defaults (bf16, TF32, cuDNN benchmark) two straight runs differ by rounding
// that training amplifies; a resumed run may differ by as much, not more.
TEST_F(GpuTrainer, ResumedRunEndsWithinRunToRunNoiseWithTheFastDefaults) {
  const std::vector<std::string> settings{"train.precision=bf16-mixed"};
  Trainer straight(gpu_run("straight-fast", settings), test_support::quiet_trainer());
  straight.fit();
  Trainer again(gpu_run("again-fast", settings), test_support::quiet_trainer());
  again.fit();
  const double noise = largest_gap(straight, again);
  const double gap = resume_gap("resumed-fast", settings, straight);
  std::cerr << "fast defaults: straight vs straight " << noise << ", resumed vs straight " << gap << "\n";
  EXPECT_LE(gap, std::max(10 * noise, 1e-5));
}

namespace {
// The lines of a run's training.log that mention `word` or the CUDA graphs: where and when an
// unexpected OOM happened (the capture, a replay, the partial batch, validation).
std::string log_lines_with(const std::string& run_dir, const std::string& word) {
  std::ifstream log(std::filesystem::path(run_dir) / "training.log");
  std::string line, found;
  while (std::getline(log, line))
    if (line.find(word) != std::string::npos || line.find("cuda graphs") != std::string::npos) found += line + "\n";
  return found;
}
}  // namespace

// Auto batch under a memory fraction: the batch found fits, is within the 90 % goal (less the
// rounding to 8) of the true largest, and the run after it has no OOM. ResNet-18 and the MLP.
TEST_F(GpuTrainer, AutoBatchUnderAMemoryCapIsNearTheLargestAndDoesNotOom) {
  for (const std::vector<std::string>& model :
       {std::vector<std::string>{"model.name=resnet18", "data.samples=8192", "train.precision=bf16-mixed"},
        std::vector<std::string>{"model.name=mlp", "data.shape=[1024]", "model.hidden=[4096, 4096]", "data.samples=65536"}}) {
    auto overrides = model;
    for (const char* o : {"train.batch_size=auto", "device.max_memory=4GiB", "train.max_steps=20", "train.epochs=1"})
      overrides.emplace_back(o);
    const auto config = gpu_run("auto-" + model[0].substr(11), overrides);
    FitResult result;
    {
      Trainer trainer(config, test_support::quiet_trainer());
      result = trainer.fit();
    }
    memory::release_cached_memory(c10::Device(c10::kCUDA, 0));  // the truth starts from the empty GPU the run did
    EXPECT_EQ(result.oom_events, 0) << model[0] << "; the run's log:\n" << log_lines_with(result.run_dir, "memory");
    const auto run = prepare_device(config);
    auto resolved = config;
    const auto data = open_data(resolved);
    const auto samples = probe_samples(data, run.device);
    // The search's record: its probes (allocated and reserved peaks) and what it held for the
    // data cache (data.cache auto put the dataset, and the chunk its feed gathers into, in GPU
    // memory). The truth holds as much, so both are measured against the same free memory.
    std::ifstream record_file(std::filesystem::path(config.logging.dir) / "auto_batch.json");
    const auto record = nlohmann::json::parse(record_file);
    std::cerr << record.dump() << "\n";  // the probes in the test's log: the GPU runs' record of the search
    const ProbeData probe{samples, data.transform, data.sources.train->size(), record.at("data_reserve_bytes").get<std::uint64_t>()};
    const auto truth = find_largest_fitting_batch(resolved, run.device, probe, result.batch_size, probe.dataset_size);
    EXPECT_LE(result.batch_size, truth.largest) << model[0];
    EXPECT_GE(result.batch_size, static_cast<std::int64_t>(0.9 * double(truth.largest)) - 8) << model[0];
    std::cerr << model[0] << ": found " << result.batch_size << ", largest " << truth.largest << "\n";
  }
}

// A real CUDA OOM mid-run (the memory fraction lowered after step 3) is survived: same steps and
// samples as the run without it.
TEST_F(GpuTrainer, ARealCudaOomMidRunIsSurvived) {
  const std::vector<std::string> common{"model.name=mlp",        "data.shape=[1024]",  "model.hidden=[4096, 4096]",
                                        "data.samples=16384",    "data.val_samples=0", "checkpoint.best_metric=none",
                                        "train.batch_size=4096", "train.epochs=1",     "train.tf32=false"};
  const c10::Device gpu(c10::kCUDA, 0);
  FitResult expected;
  std::uint64_t peak = 0;
  {  // gone before the capped run, which must not share the GPU with it
    memory::reset_peak_memory(gpu);
    Trainer reference(gpu_run("oom-reference", common), test_support::quiet_trainer());
    expected = reference.fit();
    peak = memory::memory_figures(gpu).peak;
  }
  memory::release_cached_memory(gpu);
  memory::reset_peak_memory(gpu);
  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t step) {
    if (step == 1) memory::cap_memory(gpu, peak * 3 / 4);
  };
  Trainer capped(gpu_run("oom-capped", common), options);
  const auto result = capped.fit();
  memory::cap_memory(gpu, 0);
  EXPECT_EQ(result.steps, expected.steps);
  EXPECT_EQ(result.samples, expected.samples);
  EXPECT_GE(result.oom_events, 1);
  EXPECT_LT(result.micro_batch, 4096);
}

// train.class_weights on the GPU, with autocast and without: the weighted loss trains, and the
// per-class validation counts (index_add_ on the device) add up to the figures beside them and
// count the same samples per class as the CPU does on the same data.
TEST_F(GpuTrainer, ClassWeightsTrainAndThePerClassCountsAddUp) {
  const std::vector<std::string> common{"model.name=mlp",       "data.shape=[32]",
                                        "data.classes=3",       "data.samples=1024",
                                        "data.val_samples=256", "train.class_weights=[1, 2.5, 0.5]",
                                        "train.tf32=false",     "checkpoint.best_metric=val_balanced_accuracy"};
  auto on_cpu = common;
  on_cpu.emplace_back("device=cpu");
  on_cpu.emplace_back("train.precision=fp32");
  Trainer cpu(gpu_run("weights-cpu", on_cpu), test_support::quiet_trainer());
  const auto cpu_counts = cpu.fit().last_epoch->val_class_samples;
  for (const char* precision : {"bf16-mixed", "fp32"}) {
    auto settings = common;
    settings.emplace_back(std::string("train.precision=") + precision);
    Trainer trainer(gpu_run(std::string("weights-") + precision, settings), test_support::quiet_trainer());
    const auto result = trainer.fit();
    EXPECT_LT(*result.last_loss, *result.first_loss) << precision;
    ASSERT_TRUE(result.last_epoch && result.last_epoch->val_accuracy && result.last_epoch->val_balanced_accuracy) << precision;
    const auto& e = *result.last_epoch;
    EXPECT_EQ(e.val_class_samples, cpu_counts) << precision;
    std::int64_t samples = 0, right = 0, predicted = 0;
    double recalls = 0;
    for (std::size_t c = 0; c < e.val_class_samples.size(); ++c) {
      samples += e.val_class_samples[c];
      right += e.val_class_right[c];
      predicted += e.val_class_predicted[c];
      recalls += static_cast<double>(e.val_class_right[c]) / static_cast<double>(e.val_class_samples[c]);
    }
    EXPECT_EQ(samples, 256) << precision;
    EXPECT_EQ(predicted, 256) << precision;
    EXPECT_NEAR(static_cast<double>(right) / 256, *e.val_accuracy, 1e-12) << precision;
    EXPECT_NEAR(recalls / 3, *e.val_balanced_accuracy, 1e-12) << precision;
  }
}
