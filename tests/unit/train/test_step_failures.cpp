// What a run says when it stops inside its steps: a diverged loss, or an error from LibTorch.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gputrain/train/config.hpp"
#include "train/step/step_failures.hpp"  // private: the trainer's stop messages

using namespace gputrain;
using namespace gputrain::train;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(StepFailures, DivergenceNamesTheStepsTheSettingsAndTheLastGoodCheckpoint) {
  Config config;
  config.optimizer.lr = 0.5;
  const auto nan = std::numeric_limits<double>::quiet_NaN();
  const auto error = divergence_error({nan, 11, 20, false, "runs/x/checkpoints/step-00000010.pt"}, config);
  EXPECT_EQ(error.exit_code(), ExitCode::failure);
  EXPECT_TRUE(contains(error.what(), "the loss is nan over steps 11-20 (optimizer.lr 0.5, train.precision fp32)")) << error.what();
  EXPECT_TRUE(contains(error.remedy(), "lower optimizer.lr")) << error.remedy();
  EXPECT_TRUE(contains(error.remedy(), "last: runs/x/checkpoints/step-00000010.pt")) << error.remedy();
  EXPECT_FALSE(contains(error.remedy(), "bf16-mixed")) << "the fp16 advice is for fp16 runs only";
}

TEST(StepFailures, Fp16DivergenceSaysTheScalerSkippedEveryStepAndSuggestsBf16) {
  Config config;
  config.train.precision = Precision::fp16_mixed;
  const auto error = divergence_error({std::numeric_limits<double>::infinity(), 7, 7, true, ""}, config);
  EXPECT_TRUE(contains(error.what(), "the loss is inf over step 7 and the GradScaler skipped all of them")) << error.what();
  EXPECT_TRUE(contains(error.remedy(), "use bf16-mixed")) << error.remedy();
  EXPECT_TRUE(contains(error.remedy(), "no checkpoint was written")) << error.remedy();
}

// A loss already nan at the run's first step came before any update, from data searched for NaN
// and inf before training: the forward pass is to blame, not lr and not the data.
TEST(StepFailures, ANanFromTheFirstStepPointsAtTheForwardPassNotTheLearningRateOrTheData) {
  Config config;
  Divergence d{std::numeric_limits<double>::quiet_NaN(), 1, 10, false, ""};
  d.at_first_step = true;
  const auto error = divergence_error(d, config);
  EXPECT_TRUE(contains(error.what(), "the loss is nan from the first step, before any weight was updated")) << error.what();
  EXPECT_TRUE(contains(error.remedy(), "the training data holds no NaN or inf (searched before the first step)")) << error.remedy();
  EXPECT_TRUE(contains(error.remedy(), "inputs far from unit scale may overflow: set data.standardize: true")) << error.remedy();
  EXPECT_FALSE(contains(error.remedy(), "optimizer.lr")) << error.remedy();
  EXPECT_FALSE(contains(error.remedy(), "bf16-mixed")) << error.remedy();
  EXPECT_FALSE(contains(error.remedy(), "model.torchscript")) << error.remedy();
  config.train.precision = Precision::fp16_mixed;
  config.model.torchscript = "net.pt";
  config.model.init_weights = "w.safetensors";
  config.data.standardize = true;
  config.data.task = "regression";
  const auto remedy = divergence_error(d, config).remedy();
  EXPECT_TRUE(contains(remedy, "try bf16-mixed")) << remedy;
  EXPECT_TRUE(contains(remedy, "model.torchscript's forward")) << remedy;
  EXPECT_FALSE(contains(remedy, "model.init_weights")) << remedy;  // searched before training: not a cause
  EXPECT_TRUE(contains(remedy, "targets far from unit scale may overflow: set data.standardize_targets: true")) << remedy;
  EXPECT_FALSE(contains(remedy, "data.standardize: true")) << remedy;
}

TEST(StepFailures, LibTorchErrorsGetTheFixForTheirCause) {
  const auto batch_norm = remedy_for_step_failure("Expected more than 1 value per channel when training, got input size [1, 64]", 7, 2);
  EXPECT_TRUE(contains(batch_norm, "BatchNorm")) << batch_norm;
  EXPECT_TRUE(contains(batch_norm, "samples (7) are not a multiple of the batch (2)")) << batch_norm;
  EXPECT_TRUE(contains(remedy_for_step_failure("CUDA out of memory. Tried to allocate 2.00 GiB", 7, 2), "train.grad_accum"));
  EXPECT_TRUE(contains(remedy_for_step_failure("mat1 and mat2 shapes cannot be multiplied", 7, 2), "report it"));
}
