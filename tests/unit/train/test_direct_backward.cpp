// The MLP's hand-written backward (src/train/direct_backward.cpp) against autograd: the same
// gradients, bit for bit, for every layer kind, both losses and split micro-batches, and autograd
// for everything it does not cover.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/dropout.h>
#include <torch/optim/optimizer.h>

#include "gputrain/train/amp.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/optimizer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "train/models/layers/cpu_matmul.hpp"
#include "train/step/direct_backward.hpp"  // private: the trainer's step
#include "train/models/builtin_models.hpp"
#include "train/models/module_model.hpp"
#include "train/step/training_step.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

constexpr std::int64_t kFeatures = 12, kOutputs = 5, kSamples = 24;

struct Case {
  std::string activation = "relu";
  std::string norm = "none";
  double dropout = 0.0;
  bool classification = true;
  double label_smoothing = 0.0;
  std::vector<double> class_weights = {};  // train.class_weights, one per output; empty: none
};

std::string name_of(const Case& c) {
  return c.activation + "/" + c.norm + "/dropout " + std::to_string(c.dropout) + (c.classification ? "/classes" : "/regression") +
         (c.label_smoothing > 0 ? "/label smoothing " + std::to_string(c.label_smoothing) : "") +
         (c.class_weights.empty() ? "" : "/class weights");
}

// What a registered C++ model may hold beyond the built-in MLP's options: a Linear without bias, a
// LayerNorm without affine parameters, tanh-approximated GELU, and no leading Flatten.
std::unique_ptr<Model> unusual_stack() {
  at::manual_seed(7);
  models::PlainSequential net;
  net->push_back(torch::nn::Linear(torch::nn::LinearOptions(kFeatures, 16).bias(false)));
  net->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({16}).elementwise_affine(false)));
  net->push_back(torch::nn::GELU(torch::nn::GELUOptions().approximate("tanh")));
  net->push_back(torch::nn::Dropout(0.25));  // LibTorch's, which draws with at::dropout (the built-ins' draw threaded)
  net->push_back(torch::nn::Linear(16, kOutputs));
  auto model = wrap_module(torch::nn::AnyModule(net), "unusual");
  model->set_training(true);
  return model;
}

std::unique_ptr<Model> mlp(const Case& c) {
  ModelConfig config;
  config.name = "mlp";
  config.hidden = {16, 8};
  config.activation = c.activation;
  config.norm = c.norm;
  config.dropout = c.dropout;
  at::manual_seed(7);  // the same initial weights for both models of a comparison
  auto model = build_model(ModelSpec{config, {kFeatures}, kOutputs});
  model->set_training(true);
  return model;
}

data::Batch batch_for(bool classification) {
  at::manual_seed(11);
  auto inputs = at::randn({kSamples, kFeatures});
  auto targets = classification ? at::randint(0, kOutputs, {kSamples}, at::kLong) : at::randn({kSamples, kOutputs});
  return {inputs, targets};
}

struct StepResult {
  at::Tensor loss;
  std::vector<at::Tensor> grads, params_after;
};

// One optimizer step (SGD with momentum), with or without the hand-written backward.
// One optimizer step (SGD with momentum) of `model` on `batch`, with or without the hand-written
// backward, whose products run on `matmul` (MKL: as autograd's do).
StepResult step_with(std::unique_ptr<Model> model, const data::Batch& batch, const Case& c, bool direct, std::int64_t micro_batch,
                     bool* planned = nullptr, CpuMatmul matmul = CpuMatmul::mkl) {
  auto params = model->parameters();
  OptimizerConfig opt;
  opt.name = "sgd";
  opt.lr = 0.1;
  opt.momentum = 0.9;
  auto optimizer = make_optimizer(opt, params);
  GradScaler scaler(false, at::kCPU);
  TrainConfig train;
  train.label_smoothing = c.label_smoothing;
  std::unique_ptr<DirectBackward> plan;
  if (direct) plan = DirectBackward::plan(*model, train, at::kCPU);
  if (plan) plan->use_matmul(matmul);
  if (planned) *planned = plan != nullptr;
  const data::BatchTransform transform;
  const auto class_weights = c.class_weights.empty() ? at::Tensor() : at::tensor(c.class_weights, at::kDouble).to(at::kFloat);
  StepParts parts{*model, *optimizer, scaler, params, transform, train, false, c.classification, at::kCPU, 0, nullptr, plan.get(), class_weights};
  if (plan) {
    EXPECT_TRUE(plan->takes(batch.inputs, batch.targets, c.classification)) << "else both sides ran autograd";
  }
  at::manual_seed(3);  // dropout's draws
  StepResult out;
  out.loss = accumulate_gradients(parts, batch, micro_batch);
  for (const auto& p : params) out.grads.push_back(p.grad().clone());
  apply_gradients(parts);
  for (const auto& p : params) out.params_after.push_back(p.detach().clone());
  return out;
}

StepResult one_step(const Case& c, bool direct, std::int64_t micro_batch, bool* planned = nullptr, bool unusual = false) {
  return step_with(unusual ? unusual_stack() : mlp(c), batch_for(c.classification), c, direct, micro_batch, planned);
}

void expect_identical(const StepResult& a, const StepResult& b, const std::string& what) {
  EXPECT_TRUE(at::equal(a.loss, b.loss)) << what << ": loss " << a.loss.item<double>() << " vs " << b.loss.item<double>();
  ASSERT_EQ(a.grads.size(), b.grads.size()) << what;
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    EXPECT_TRUE(at::equal(a.grads[i], b.grads[i]))
        << what << ": gradient " << i << " differs by up to " << (a.grads[i] - b.grads[i]).abs().max().item<double>();
    EXPECT_TRUE(at::equal(a.params_after[i], b.params_after[i])) << what << ": parameter " << i << " after the step";
  }
}

// The hand-written step and autograd's on the same case agree to rounding (losses whose terms are
// summed in another order than ATen's), and the hand-written one was the step taken.
void expect_close_to_autograd(const Case& c, std::int64_t micro) {
  const auto what = name_of(c) + ", micro-batch " + std::to_string(micro);
  bool planned = false;
  const auto direct = one_step(c, true, micro, &planned);
  ASSERT_TRUE(planned) << what;
  const auto autograd = one_step(c, false, micro);
  EXPECT_TRUE(at::allclose(direct.loss, autograd.loss, 1e-6, 1e-7)) << what << ": loss " << direct.loss.item<double>() << " vs "
                                                                    << autograd.loss.item<double>();
  for (std::size_t i = 0; i < direct.grads.size(); ++i)
    EXPECT_TRUE(at::allclose(direct.grads[i], autograd.grads[i], 1e-5, 1e-7))
        << what << ": gradient " << i << " differs by up to " << (direct.grads[i] - autograd.grads[i]).abs().max().item<double>();
}

}  // namespace

TEST(DirectBackward, EveryLayerKindGivesAutogradsGradientsBitForBit) {
  std::vector<Case> cases;
  for (const std::string activation : {"relu", "gelu", "silu", "tanh"})
    for (const std::string norm : {"none", "layer"})
      for (const double dropout : {0.0, 0.25}) cases.push_back({activation, norm, dropout, true});
  cases.push_back({"relu", "layer", 0.25, false});
  cases.push_back({"tanh", "none", 0.0, false});
  for (const auto& c : cases) {
    bool planned = false;
    const auto direct = one_step(c, true, kSamples, &planned);
    ASSERT_TRUE(planned) << name_of(c) << ": the MLP should get the hand-written backward";
    expect_identical(direct, one_step(c, false, kSamples), name_of(c));
  }
}

TEST(DirectBackward, LayersWithoutBiasOrAffineParametersMatchToo) {
  bool planned = false;
  const Case c;
  const auto direct = one_step(c, true, kSamples, &planned, /*unusual=*/true);
  ASSERT_TRUE(planned);
  expect_identical(direct, one_step(c, false, kSamples, nullptr, true), "no bias, no affine, tanh GELU");
}

// Micro-batches weight each loss by its share (the OOM handler's split, grad_accum): the seeds of
// the backward and the accumulation into .grad() must match autograd's too.
TEST(DirectBackward, SplitMicroBatchesAccumulateAsAutogradDoes) {
  for (const bool classification : {true, false}) {
    const Case c{"relu", "layer", 0.25, classification};
    for (const std::int64_t micro : {8, 10}) {  // 10: uneven shares (10, 10, 4)
      const auto what = name_of(c) + ", micro-batch " + std::to_string(micro);
      expect_identical(one_step(c, true, micro), one_step(c, false, micro), what);
    }
  }
}

// train.label_smoothing's loss, (1 - eps) * nll + eps / K * the mean of -sum(log_probs), and its
// gradient: autograd's through at::cross_entropy_loss. The terms are summed in another order than
// ATen's, so the figures agree to rounding rather than bit for bit.
TEST(DirectBackward, LabelSmoothingGivesAutogradsLossAndGradients) {
  for (const double eps : {0.1, 1.0}) {
    for (const std::int64_t micro : {kSamples, std::int64_t{10}}) {
      const Case c{"relu", "layer", 0.25, true, eps};
      expect_close_to_autograd(c, micro);
    }
  }
  // Smoothing changes the loss (else the comparison above would not show it is applied).
  const auto plain = one_step(Case{"relu", "layer", 0.25, true, 0.0}, true, kSamples);
  const auto smoothed = one_step(Case{"relu", "layer", 0.25, true, 0.1}, true, kSamples);
  EXPECT_GT(std::abs(plain.loss.item<double>() - smoothed.loss.item<double>()), 1e-3);
}

// train.class_weights: each sample's loss times its class's weight, averaged over the samples.
TEST(DirectBackward, ClassWeightsGiveAutogradsLossAndGradients) {
  const std::vector<double> weights{1.0, 3.0, 0.5, 2.0, 0.0};
  for (const double eps : {0.0, 0.1}) {
    for (const std::int64_t micro : {kSamples, std::int64_t{10}}) {
      const Case c{"relu", "layer", 0.25, true, eps, weights};
      expect_close_to_autograd(c, micro);
    }
  }
  // The weights change the loss (else the comparison above would not show they are applied).
  const auto plain = one_step(Case{"relu", "none", 0.0, true}, true, kSamples);
  const auto weighted = one_step(Case{"relu", "none", 0.0, true, 0.0, weights}, true, kSamples);
  EXPECT_GT(std::abs(plain.loss.item<double>() - weighted.loss.item<double>()), 1e-3);
}

// The plain mean over samples (not PyTorch's division by the batch's summed weights) is what lets
// micro-batches add up to the whole batch: the OOM split and gradient accumulation change nothing.
TEST(DirectBackward, WithClassWeightsMicroBatchesAddUpToTheWholeBatch) {
  for (const bool direct : {true, false}) {
    const Case c{"relu", "none", 0.0, true, 0.0, {1.0, 3.0, 0.5, 2.0, 0.0}};
    const auto whole = one_step(c, direct, kSamples), split = one_step(c, direct, 7);
    const std::string what = direct ? "by hand" : "autograd";
    EXPECT_TRUE(at::allclose(whole.loss, split.loss, 1e-6, 1e-7)) << what << ": " << whole.loss.item<double>() << " vs " << split.loss.item<double>();
    for (std::size_t i = 0; i < whole.grads.size(); ++i)
      EXPECT_TRUE(at::allclose(whole.grads[i], split.grads[i], 1e-5, 1e-7))
          << what << ": gradient " << i << " differs by up to " << (whole.grads[i] - split.grads[i]).abs().max().item<double>();
  }
}

TEST(DirectBackward, TheComparedStepReallyTrains) {
  // Guard against a vacuous comparison: the step really moves the weights and the loss is real.
  const Case c{"relu", "none", 0.0, true};
  const auto step = one_step(c, true, kSamples);
  const auto before = mlp(c)->parameters();
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_FALSE(at::equal(before[i], step.params_after[i])) << "parameter " << i;
  EXPECT_GT(step.loss.item<double>(), 0.5);  // about log(5) for an untrained 5-class model
}

TEST(DirectBackward, AnythingItDoesNotCoverStaysWithAutograd) {
  const TrainConfig fp32;
  EXPECT_EQ(DirectBackward::plan(*mlp({"relu", "batch"}), fp32, at::kCPU), nullptr) << "batch norm";
  EXPECT_EQ(DirectBackward::plan(*mlp({}), fp32, c10::Device("cuda:0")), nullptr) << "measured on the CPU only";
  TrainConfig bf16;
  bf16.precision = Precision::bf16_mixed;
  EXPECT_EQ(DirectBackward::plan(*mlp({}), bf16, at::kCPU), nullptr) << "autocast";

  ModelConfig cnn;
  cnn.name = "small_cnn";
  cnn.width = 4;
  EXPECT_EQ(DirectBackward::plan(*build_model(ModelSpec{cnn, {3, 8, 8}, 10}), fp32, at::kCPU), nullptr);

  auto frozen = mlp({});
  frozen->parameters().front().set_requires_grad(false);
  EXPECT_EQ(DirectBackward::plan(*frozen, fp32, at::kCPU), nullptr) << "a frozen parameter";
}

TEST(DirectBackward, TakesOnlyBatchesShapedAsItsPlanExpects) {
  auto model = mlp({});
  const auto plan = DirectBackward::plan(*model, TrainConfig{}, at::kCPU);
  ASSERT_NE(plan, nullptr);
  const auto x = at::randn({4, kFeatures});
  EXPECT_TRUE(plan->takes(x, at::zeros({4}, at::kLong), true));
  EXPECT_TRUE(plan->takes(at::randn({4, 3, 4}), at::zeros({4}, at::kLong), true)) << "flattened to 12 features";
  EXPECT_FALSE(plan->takes(x, at::zeros({4, kOutputs}), true)) << "class probabilities: autograd's cross-entropy path";
  EXPECT_TRUE(plan->takes(x, at::zeros({4, kOutputs}), false));
  EXPECT_FALSE(plan->takes(x, at::zeros({4, 1}), false)) << "a broadcast target";
  EXPECT_FALSE(plan->takes(x.to(at::kDouble), at::zeros({4}, at::kLong), true));
}

// The trainer plans it for its model and says so; a model outside it trains as before.
TEST(DirectBackward, TheTrainerUsesItForAnMlpAndSaysSo) {
  // small_run: flatten, then [Linear, ReLU, Dropout] x 2, then Linear.
  const auto mlp_run = test_support::fit_capturing_console(test_support::small_run("direct-mlp"));
  const std::string said = cpu_matmul_for_this_machine() == CpuMatmul::mkl
                               ? "(8 layers, fp32 on the CPU; the same gradients as autograd's)"
                               : "(8 layers, oneDNN's matrix products, fp32 on the CPU; autograd's gradients within fp32 rounding)";
  EXPECT_NE(mlp_run.console.find("training step: mlp's backward by hand, without autograd's graph " + said), std::string::npos)
      << mlp_run.console;
  const auto batch_norm_run = test_support::fit_capturing_console(test_support::small_run("direct-bn", {"model.norm=batch"}));
  EXPECT_EQ(batch_norm_run.console.find("backward by hand"), std::string::npos) << batch_norm_run.console;
  EXPECT_EQ(batch_norm_run.result.steps, mlp_run.result.steps);
}

// With oneDNN's products (AMD processors with AVX-512), the benchmark's MLP (256-512-256-10, batch
// 256) gets autograd's loss, gradients and step within fp32 rounding, and its Linears really ran on
// oneDNN: MKL's bits differ (at sums this long; short ones can come out the same).
TEST(DirectBackward, OneDnnsProductsGiveAutogradsGradientsWithinRounding) {
  if (!onednn_matmul_available()) GTEST_SKIP() << "this LibTorch has no oneDNN matmul to call";
  const auto wide_mlp = [] {
    ModelConfig config;
    config.name = "mlp";
    config.hidden = {512, 256};
    at::manual_seed(7);
    auto model = build_model(ModelSpec{config, {256}, 10});
    model->set_training(true);
    return model;
  };
  at::manual_seed(11);
  const data::Batch batch{at::randn({256, 256}), at::randint(0, 10, {256}, at::kLong)};
  const Case c{};
  bool planned = false;
  const auto reference = step_with(wide_mlp(), batch, c, /*direct=*/false, 256);
  const auto with_onednn = step_with(wide_mlp(), batch, c, /*direct=*/true, 256, &planned, CpuMatmul::onednn);
  const auto with_mkl = step_with(wide_mlp(), batch, c, /*direct=*/true, 256, nullptr, CpuMatmul::mkl);
  ASSERT_TRUE(planned);
  EXPECT_NEAR(with_onednn.loss.item<double>(), reference.loss.item<double>(), 1e-6);
  bool any_bit_differs = false;
  for (std::size_t i = 0; i < reference.grads.size(); ++i) {
    const double scale = reference.grads[i].abs().max().item<double>();
    EXPECT_LE((with_onednn.grads[i] - reference.grads[i]).abs().max().item<double>(), 1e-5 * scale + 1e-7) << "gradient " << i;
    EXPECT_TRUE(at::allclose(with_onednn.params_after[i], reference.params_after[i], 1e-5, 1e-6)) << "parameter " << i;
    EXPECT_TRUE(at::equal(with_mkl.grads[i], reference.grads[i])) << "gradient " << i << " with MKL's products";
    any_bit_differs = any_bit_differs || !at::equal(with_onednn.grads[i], reference.grads[i]);
  }
  EXPECT_TRUE(any_bit_differs) << "every gradient has MKL's bits: the products did not run on oneDNN";
}

// oneDNN's products where MKL's are AVX2 alone: AMD processors with AVX-512 (Zen 4 and on); MKL
// elsewhere, and wherever this LibTorch has no oneDNN matmul.
TEST(CpuMatmul, OneDnnOnAmdProcessorsWithAvx512Only) {
  const std::string zen5 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nflags\t\t: fpu sse2 avx2 fma avx512f avx512bw avx512_bf16\n";
  const std::string zen3 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nflags\t\t: fpu sse2 avx2 fma\n";
  const std::string xeon = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx2 fma avx512f avx512bw\n";
  EXPECT_EQ(cpu_matmul_for(zen5, true), CpuMatmul::onednn);
  EXPECT_EQ(cpu_matmul_for(zen5, false), CpuMatmul::mkl);
  EXPECT_EQ(cpu_matmul_for(zen3, true), CpuMatmul::mkl);
  EXPECT_EQ(cpu_matmul_for(xeon, true), CpuMatmul::mkl) << "MKL has AVX-512 kernels for Intel's processors";
  EXPECT_EQ(cpu_matmul_for("", true), CpuMatmul::mkl);
}
