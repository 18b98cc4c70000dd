// The built-in transformer (scaled_dot_product_attention, batch-first) against LibTorch's own
// encoder modules with the same weights: same names, same outputs, same gradients.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/container/any.h>

#include <map>

#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "support/libtorch_transformer.hpp"
#include "train/models/builtin_models.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

constexpr std::int64_t kSequence = 7, kFeatures = 5, kWidth = 16, kHeads = 4, kLayers = 2, kOutputs = 3;

// Width 64 and more runs the Linears on oneDNN where this machine prefers it (cpu_linear.hpp).
std::unique_ptr<Model> transformer(double dropout, std::int64_t width = kWidth, const std::string& activation = "relu",
                                   bool norm_first = false) {
  ModelSpec spec;
  spec.config.activation = activation;
  spec.config.norm_first = norm_first;
  spec.config.name = "transformer";
  spec.config.d_model = width;
  spec.config.heads = kHeads;
  spec.config.ff_dim = width + width / 2;
  spec.config.layers = kLayers;
  spec.config.dropout = dropout;
  spec.input_shape = {kSequence, kFeatures};
  spec.outputs = kOutputs;
  return build_model(spec);
}

test_support::LibTorchTransformer reference(std::int64_t width = kWidth, const std::string& activation = "relu", bool norm_first = false) {
  return test_support::LibTorchTransformer(kSequence, kFeatures, width, kHeads, width + width / 2, kLayers, kOutputs, 0.0, activation,
                                           norm_first);
}

// Moves every weight off its initial value (zero biases, layers equal to each other), so that a
// weight used in the wrong place shows in the outputs.
void perturb(Model& model) {
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : model.named_state()) tensor.add_(at::randn_like(tensor) * 0.1);
}

std::map<std::string, at::Tensor> gradients(const NamedTensors& parameters) {
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, tensor] : parameters) out[name] = tensor.grad().clone();
  return out;
}

}  // namespace

TEST(Transformer, ComputesWhatLibTorchsEncoderDoesWithItsParameterNames) {
  const struct {
    std::int64_t width;
    const char* activation;
    bool norm_first;
  } cases[] = {{kWidth, "relu", false}, {64, "relu", false}, {kWidth, "gelu", true}, {64, "gelu", true}};
  for (const auto& c : cases) {
    SCOPED_TRACE("d_model " + std::to_string(c.width) + ", " + c.activation + (c.norm_first ? ", norm_first" : ""));
    at::manual_seed(3);
    auto model = transformer(0.0, c.width, c.activation, c.norm_first);
    perturb(*model);
    auto libtorch = reference(c.width, c.activation, c.norm_first);
    libtorch->copy_from(*model);  // throws unless every name and shape is LibTorch's
    const auto x = at::randn({20, kSequence, kFeatures});

    model->set_training(false);
    libtorch->eval();
    EXPECT_TRUE(at::allclose(model->forward(x), libtorch->forward(x), 1e-4, 1e-5));

    model->set_training(true);
    libtorch->train();
    const auto weights = at::randn({20, kOutputs});
    (model->forward(x) * weights).sum().backward();
    (libtorch->forward(x) * weights).sum().backward();
    const auto ours = gradients(model->named_state());
    NamedTensors theirs;
    for (const auto& item : libtorch->named_parameters()) theirs.emplace_back(item.key(), item.value());
    for (const auto& [name, gradient] : gradients(theirs)) {
      const double scale = gradient.abs().max().item<double>();
      EXPECT_LE((ours.at(name) - gradient).abs().max().item<double>(), 1e-4 * scale + 1e-7) << name;
    }
  }
}

// The same random draws in the same order as LibTorch's modules: a seed gives the initial weights
// that the model, written with LibTorch's encoder, gave before.
TEST(Transformer, ASeedGivesTheInitialWeightsLibTorchsEncoderGives) {
  at::manual_seed(21);
  const auto ours = transformer(0.1)->named_state();
  at::manual_seed(21);
  auto libtorch = test_support::LibTorchTransformer(kSequence, kFeatures, kWidth, kHeads, kWidth + kWidth / 2, kLayers, kOutputs, 0.1);
  const auto theirs = libtorch->named_parameters();
  ASSERT_EQ(ours.size(), theirs.size());
  for (const auto& [name, tensor] : ours) EXPECT_TRUE(at::equal(tensor, theirs[name])) << name;
}

TEST(Transformer, LayersStartEqualWithZeroAttentionBiasesAsPyTorchs) {
  const auto state = transformer(0.1)->named_state();
  std::map<std::string, at::Tensor> by_name(state.begin(), state.end());
  const std::string first = "encoder.layers.0.", second = "encoder.layers.1.";
  int compared = 0;
  for (const auto& [name, tensor] : by_name) {
    if (name.rfind(first, 0) != 0) continue;
    EXPECT_TRUE(at::equal(tensor, by_name.at(second + name.substr(first.size())))) << name;
    ++compared;
  }
  EXPECT_EQ(compared, 12);  // in_proj weight and bias, out_proj, linear1, linear2, norm1, norm2
  EXPECT_TRUE(at::equal(by_name.at("encoder.layers.0.self_attn.in_proj_bias"), at::zeros({3 * kWidth})));
  EXPECT_FALSE(at::equal(by_name.at("encoder.layers.0.self_attn.in_proj_weight"), at::zeros({3 * kWidth, kWidth})));
}

// Dropout (in attention and after each block) draws in training and is off in evaluation, where
// the model computes what the same weights do without dropout.
TEST(Transformer, DropsOutOnlyInTraining) {
  at::manual_seed(4);
  auto model = transformer(0.5);
  perturb(*model);
  auto libtorch = reference();
  libtorch->copy_from(*model);
  libtorch->eval();
  const auto x = at::randn({4, kSequence, kFeatures});
  model->set_training(true);
  EXPECT_FALSE(at::allclose(model->forward(x), model->forward(x)));
  model->set_training(false);
  EXPECT_TRUE(at::allclose(model->forward(x), libtorch->forward(x), 1e-5, 1e-5));
}

// The run's note says which attention kernel trains: on the CPU the written-out path when attention
// drops out, else scaled_dot_product_attention's own choice for the step's dtype and shape.
TEST(Transformer, TheRunsNoteNamesTheAttentionKernel) {
  ModelSpec spec;
  spec.config.name = "transformer";
  spec.config.d_model = 128;
  spec.config.heads = 4;
  spec.input_shape = {32, 16};
  spec.config.dropout = 0.1;
  EXPECT_EQ(models::transformer_attention_note(spec, at::kCPU, Precision::fp32),
            "attention: written out, its dropout masks drawn in vector lanes (the CPU's fused kernel has no dropout)");
  spec.config.dropout = 0.0;  // LibTorch 2.11's CPU flash kernel, for fp32 and bf16 alike
  EXPECT_EQ(models::transformer_attention_note(spec, at::kCPU, Precision::fp32),
            "attention: flash attention (scaled_dot_product_attention's choice for fp32, 4 heads of 32, on the CPU)");
  EXPECT_EQ(models::transformer_attention_note(spec, at::kCPU, Precision::bf16_mixed),
            "attention: flash attention (scaled_dot_product_attention's choice for bf16, 4 heads of 32, on the CPU)");
}
