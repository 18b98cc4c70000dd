// What a run says when it stops inside its steps: a diverged loss, or an error from LibTorch.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>

#include <cmath>
#include <limits>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/text_checks.hpp"
#include "train/step/step_failures.hpp"  // private: the trainer's stop messages

using gputrain::test_support::contains;
using namespace gputrain;
using namespace gputrain::train;

namespace {

// A linear model whose forward fails in LibTorch at its `fail_at`-th call in training mode, or at
// its first in evaluation mode when `fail_at` is 0.
struct RefusingNetImpl : torch::nn::Module {
  RefusingNetImpl(std::int64_t in, std::int64_t out, int refuse_at)
      : linear(register_module("linear", torch::nn::Linear(in, out))), fail_at(refuse_at) {}
  at::Tensor forward(const at::Tensor& x) {
    if (is_training() ? ++calls == fail_at : fail_at == 0) TORCH_CHECK(false, "this layer refuses call ", calls);
    return linear(x.flatten(1));
  }
  torch::nn::Linear linear;
  int calls = 0, fail_at;
};
TORCH_MODULE(RefusingNet);

// The message of the error a run of the refusing model ends with.
std::string run_error(int fail_at) {
  const std::string name = "refusing_net_" + std::to_string(fail_at);
  register_model(
      name, [fail_at](const ModelSpec& spec) { return torch::nn::AnyModule(RefusingNet(spec.input_shape.at(0), spec.outputs, fail_at)); });
  try {
    Trainer trainer(test_support::small_run(name, {"model.name=" + name}), test_support::quiet_trainer());
    trainer.fit();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::failure);
    return std::string(e.what()) + "\nfix: " + e.remedy();
  }
  ADD_FAILURE() << "the run did not fail";
  return "";
}

}  // namespace

// LibTorch's error in a step is said with the step (or the validation) it ended, without
// LibTorch's C++ backtrace, which a user cannot act on.
TEST(StepFailures, ALibTorchErrorNamesWhatItEndedWithoutItsBacktrace) {
  const auto in_step = run_error(2);
  EXPECT_TRUE(contains(in_step, "step 2 failed in LibTorch: this layer refuses call 2")) << in_step;
  EXPECT_FALSE(contains(in_step, "Exception raised from")) << in_step;
  EXPECT_TRUE(contains(in_step, "fix: if the config looks right, report it")) << in_step;
  const auto in_validation = run_error(0);
  EXPECT_TRUE(contains(in_validation, "validation after epoch 1 failed in LibTorch: this layer refuses")) << in_validation;
}

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
  const std::string batch_norm = "Expected more than 1 value per channel when training, got input size [1, 64]";
  const auto split = remedy_for_step_failure(batch_norm, 1);
  EXPECT_TRUE(contains(split, "batch-norm layer")) << split;
  EXPECT_TRUE(contains(split, "oom.min_micro_batch: 2")) << split;
  const auto dropped = remedy_for_step_failure(batch_norm, 16);
  EXPECT_TRUE(contains(dropped, "unreadable samples")) << dropped;
  EXPECT_TRUE(contains(dropped, "data.cache: ram")) << dropped;  // data.drop_last would not help: the batch shrank mid-epoch
  EXPECT_TRUE(contains(remedy_for_step_failure("CUDA out of memory. Tried to allocate 2.00 GiB", 2), "train.grad_accum"));
  // Fewer logits than classes on some batch (checked on batches of 2 and 3 before training).
  EXPECT_TRUE(contains(remedy_for_step_failure("Target 1 is out of bounds.", 16), "the model must give one per class (data.classes)"));
  // A loss cut off from the weights (a C++ model's detach; a TorchScript one is refused before training).
  EXPECT_TRUE(contains(remedy_for_step_failure("element 0 of tensors does not require grad and does not have a grad_fn", 2),
                       "the loss does not depend on any weight that trains"));
  EXPECT_TRUE(contains(remedy_for_step_failure("mat1 and mat2 shapes cannot be multiplied", 2), "report it"));
}

// A TorchScript module's failed operation: its message and the module's own line (not PyTorch's
// nn.Linear inside it), without the interpreter's two tracebacks.
TEST(StepFailures, AScriptedModulesFailedOperationNamesItsMessageAndLine) {
  const std::string what =
      "The following operation failed in the TorchScript interpreter.\n"
      "Traceback of TorchScript, serialized code (most recent call last):\n"
      "  File \"code/__torch__.py\", line 12, in forward\n"
      "    return (_0).forward(h, )\n"
      "            ~~~~~~~~~~~ <--- HERE\n"
      "\n"
      "Traceback of TorchScript, original code (most recent call last):\n"
      "  File \"/home/me/net.py\", line 9, in forward\n"
      "        return self.head(h)\n"
      "               ~~~~~~~~~ <--- HERE\n"
      "  File \"/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py\", line 134, in forward\n"
      "        return F.linear(input, self.weight, self.bias)\n"
      "               ~~~~~~~~ <--- HERE\n"
      "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x64 and 32x3)\n";
  const auto error = interpreter_failure(what, "step 3", "net.pt", true);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(std::string(error->what()),
            "step 3 failed in model.torchscript (net.pt): RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x64 and 32x3), "
            "at /home/me/net.py:9 in forward: return self.head(h)");
  EXPECT_TRUE(contains(error->remedy(), "training.log")) << error->remedy();
  EXPECT_FALSE(contains(interpreter_failure(what, "the evaluation", "net.pt", false)->remedy(), "training.log"));
  EXPECT_FALSE(interpreter_failure("mat1 and mat2 shapes cannot be multiplied", "step 3", "net.pt", true).has_value());
}
