// The trainer on a GPU: mixed precision, memory figures, resume. Skipped without a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <filesystem>

#include "gputrain/core/stop_signal.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

namespace {

Config gpu_run(const std::string& name, std::vector<std::string> overrides) {
  const auto dir = fs::temp_directory_path() / ("gputrain-gpu-trainer-" + name);
  fs::remove_all(dir);
  std::vector<std::string> all{"model.name=resnet18", "data.shape=[3, 32, 32]", "data.samples=512", "data.val_samples=128",
                               "train.epochs=2", "train.batch_size=64", "train.channels_last=true", "device=cuda",
                               "logging.progress=off", "logging.every_steps=4", "logging.dir=" + dir.string()};
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

TEST_F(GpuTrainer, ResumedRunEndsCloseToAnUninterruptedOne) {
  Trainer straight(gpu_run("straight", {"train.cudnn_benchmark=false", "train.precision=fp32", "train.tf32=false"}), test_support::quiet_trainer());
  straight.fit();
  const auto config = gpu_run("resumed", {"train.cudnn_benchmark=false", "train.precision=fp32", "train.tf32=false"});
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
  const auto a = straight.model().named_state(), b = second.model().named_state();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(at::allclose(a[i].second.to(at::kDouble), b[i].second.to(at::kDouble), 1e-4, 1e-5)) << a[i].first;
}
