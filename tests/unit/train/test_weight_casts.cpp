// BatchedWeightCasts (src/train/models/layers/weight_casts.hpp): the built-in models' weights cast
// for autocast in one copy each way give autocast's own outputs and gradients bit for bit, and
// take the place of its per-layer casts.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "gputrain/train/amp.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "train/models/layers/weight_casts.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

ModelSpec spec_of(const std::string& name, std::vector<std::int64_t> shape) {
  ModelSpec s;
  s.config.name = name;
  s.input_shape = std::move(shape);
  s.outputs = 5;
  if (name == "transformer") {
    s.config.d_model = 16;
    s.config.heads = 2;
    s.config.ff_dim = 24;
    s.config.layers = 2;
  }
  return s;
}

struct Pass {
  at::Tensor output;
  std::vector<at::Tensor> grads;
};

// One autocast forward and backward on the CPU (bf16 unless said), the weights cast per layer by
// autocast or batched in groups of `group_elements`.
Pass run_pass(Model& model, const at::Tensor& x, bool batched, std::int64_t group_elements = BatchedWeightCasts::kGroupElements,
              const BatchedWeightCasts::BucketOf& bucket_of = {}, Precision precision = Precision::bf16_mixed) {
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
  at::Tensor output;
  {
    AutocastScope autocast(at::kCPU, precision);
    BatchedWeightCasts casts(*model.module());
    const auto scope = batched ? casts.cast(compute_dtype(precision), bucket_of, group_elements) : BatchedWeightCasts::Scope();
    output = model.forward(x);
  }
  (output.to(at::kFloat) * at::linspace(-1, 1, output.numel()).view(output.sizes())).sum().backward();
  Pass pass{output.detach(), {}};
  for (auto& p : model.parameters()) pass.grads.push_back(p.grad().clone());
  return pass;
}

// How many times ATen ran each operator of `names` (any thread: the trainer steps on its own).
std::atomic<int> g_counts[2];
const char* g_names[2] = {"", ""};

template <typename Work>
void count_operators(const char* first, const char* second, Work&& work) {
  g_names[0] = first;
  g_names[1] = second;
  for (auto& c : g_counts) c = 0;
  const auto handle =
      at::addGlobalCallback(at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        for (int i = 0; i < 2; ++i)
          if (std::strcmp(fn.name(), g_names[i]) == 0) ++g_counts[i];
        return nullptr;
      }));
  work();
  at::removeCallback(handle);
}

}  // namespace

TEST(WeightCasts, BuiltInModelsGetAutocastsOutputsAndGradientsBitForBit) {
  const std::pair<const char*, std::vector<std::int64_t>> cases[] = {
      {"mlp", {12}}, {"small_cnn", {3, 8, 8}}, {"resnet18", {3, 8, 8}}, {"transformer", {6, 4}}};
  for (const auto precision : {Precision::bf16_mixed, Precision::fp16_mixed})
    for (const auto& [name, shape] : cases) {
      // fp16 on a CPU runs in scalar loops: the MLP alone (ResNet-18 took minutes).
      if (precision == Precision::fp16_mixed && std::strcmp(name, "mlp") != 0) continue;
      SCOPED_TRACE(std::string(name) + (precision == Precision::fp16_mixed ? ", fp16" : ", bf16"));
      at::manual_seed(11);
      auto model = build_model(spec_of(name, shape));
      const auto x = at::randn([&] {
        std::vector<std::int64_t> sizes{4};
        sizes.insert(sizes.end(), shape.begin(), shape.end());
        return sizes;
      }());
      // Batch norm's running statistics move each pass: the same number of passes on each side.
      const auto per_layer = run_pass(*model, x, false, BatchedWeightCasts::kGroupElements, {}, precision);
      const auto batched = run_pass(*model, x, true, BatchedWeightCasts::kGroupElements, {}, precision);
      const auto in_groups = run_pass(*model, x, true, 1, {}, precision);  // a group per weight: the same again
      EXPECT_EQ(batched.output.scalar_type(), per_layer.output.scalar_type());
      EXPECT_TRUE(at::equal(batched.output, per_layer.output));
      EXPECT_TRUE(at::equal(in_groups.output, per_layer.output));
      ASSERT_EQ(batched.grads.size(), per_layer.grads.size());
      for (std::size_t i = 0; i < per_layer.grads.size(); ++i) {
        EXPECT_TRUE(at::equal(batched.grads[i], per_layer.grads[i])) << "parameter " << i;
        EXPECT_TRUE(at::equal(in_groups.grads[i], per_layer.grads[i])) << "parameter " << i;
        EXPECT_EQ(batched.grads[i].strides(), per_layer.grads[i].strides()) << "parameter " << i;
      }
    }
}

// Autocast casts each weight in its own operator forward and again in backward; batched, those
// casts are gone: one multi-tensor copy forward for all the weights, and one per group backward.
TEST(WeightCasts, OneCopyForwardAndOnePerGroupBackwardReplaceAutocastsCastPerLayer) {
  at::manual_seed(2);
  auto model = build_model(spec_of("resnet18", {3, 8, 8}));
  const auto x = at::randn({2, 3, 8, 8});
  const auto weights = static_cast<int>(BatchedWeightCasts(*model->module()).size());
  EXPECT_EQ(weights, 22) << "ResNet-18's 20 convolutions and the classifier's weight and bias";
  count_operators("aten::_to_copy", "aten::_foreach_copy_", [&] { run_pass(*model, x, false); });
  const int per_layer_casts = g_counts[0];
  EXPECT_EQ(g_counts[1], 0);
  count_operators("aten::_to_copy", "aten::_foreach_copy_", [&] { run_pass(*model, x, true); });
  EXPECT_EQ(per_layer_casts - g_counts[0], 2 * weights) << "every weight's cast forward and its gradient's backward";
  EXPECT_EQ(g_counts[1], 2) << "ResNet-18's 11M weights are one group of at most 16M";
  count_operators("aten::_to_copy", "aten::_foreach_copy_", [&] { run_pass(*model, x, true, std::int64_t{4} << 20); });
  EXPECT_EQ(g_counts[1], 1 + 4) << "in groups of at most 4M: four backward (each of layer4's 2.4M convolutions starts one)";
  count_operators("aten::_to_copy", "aten::_foreach_copy_", [&] { run_pass(*model, x, true, 1); });
  EXPECT_EQ(g_counts[1], 1 + weights);
  // Under DDP a group holds one gradient bucket's weights: here five weights a bucket.
  BatchedWeightCasts::BucketOf every_fifth = [n = 0](const at::Tensor&) mutable { return std::int64_t{n++ / 5}; };
  count_operators("aten::_to_copy", "aten::_foreach_copy_", [&] { run_pass(*model, x, true, std::int64_t{1} << 30, every_fifth); });
  EXPECT_EQ(g_counts[1], 1 + (weights + 4) / 5);
}

TEST(WeightCasts, LayersGetTheirWeightsBackAfterTheForwardAndAfterAThrow) {
  torch::nn::Linear layer(3, 2);
  const auto weight = layer->weight, bias = layer->bias;
  BatchedWeightCasts casts(*layer);
  ASSERT_EQ(casts.size(), 2u);
  {
    const auto scope = casts.cast(at::kBFloat16);
    EXPECT_EQ(layer->weight.scalar_type(), at::kBFloat16);
    EXPECT_TRUE(at::equal(layer->weight, weight.detach().to(at::kBFloat16)));
  }
  EXPECT_TRUE(layer->weight.is_same(weight));
  EXPECT_TRUE(layer->bias.is_same(bias));
  try {
    const auto scope = casts.cast(at::kHalf);
    throw std::runtime_error("a forward that fails");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(layer->weight.is_same(weight));
  EXPECT_TRUE(layer->bias.is_same(bias));
  // A layer a model reaches twice has its members swapped twice and put back all the same.
  torch::nn::Sequential twice(layer, layer);
  {
    const auto scope = BatchedWeightCasts(*twice).cast(at::kBFloat16);
    EXPECT_EQ(layer->weight.scalar_type(), at::kBFloat16);
  }
  EXPECT_TRUE(layer->weight.is_same(weight));
}

// A weight two layers share is cast for each, and its gradient is the fp32 sum of both uses' as
// autocast's casts per use give it; a frozen weight's copy gives autocast's outputs too.
TEST(WeightCasts, ASharedWeightIsCastForEachLayerAndAFrozenOneGivesAutocastsOutputs) {
  struct Tied : torch::nn::Module {
    Tied() {
      first = register_module("first", torch::nn::Linear(4, 4));
      second = register_module("second", torch::nn::Linear(4, 4));
      second->weight = first->weight;
      frozen = register_module("frozen", torch::nn::Linear(torch::nn::LinearOptions(4, 3).bias(false)));
      frozen->weight.set_requires_grad(false);
    }
    at::Tensor forward(const at::Tensor& x) { return frozen(second(first(x))); }
    torch::nn::Linear first{nullptr}, second{nullptr}, frozen{nullptr};
  };
  at::manual_seed(4);
  Tied tied;
  BatchedWeightCasts casts(tied);
  EXPECT_EQ(casts.size(), 5u) << "the shared weight for each layer, the two biases and the frozen weight";
  const auto x = at::randn({5, 4});
  const auto pass = [&](bool batched) {
    tied.zero_grad(/*set_to_none=*/true);
    at::Tensor out;
    {
      AutocastScope autocast(at::kCPU, Precision::bf16_mixed);
      const auto scope = batched ? casts.cast(at::kBFloat16) : BatchedWeightCasts::Scope();
      out = tied.forward(x);
    }
    out.to(at::kFloat).pow(2).sum().backward();
    return std::make_pair(out.detach(), tied.first->weight.grad().clone());
  };
  const auto per_layer = pass(false), batched = pass(true);
  EXPECT_TRUE(at::equal(batched.first, per_layer.first));
  EXPECT_TRUE(at::equal(batched.second, per_layer.second));
  EXPECT_FALSE(tied.frozen->weight.grad().defined());
}

// A frozen weight is cast once, and again only after it changed: its copy stays where it is, for
// a captured step that reads it there.
TEST(WeightCasts, AFrozenWeightIsCastOnceAndAgainOnlyOnceItChanged) {
  torch::nn::Linear frozen(torch::nn::LinearOptions(6, 3).bias(false));
  frozen->weight.set_requires_grad(false);
  const auto weight = frozen->weight;
  BatchedWeightCasts casts(*frozen);
  at::Tensor copy;
  const auto copies_in_a_cast = [&] {
    count_operators("aten::_foreach_copy_", "", [&] {
      const auto scope = casts.cast(at::kBFloat16);
      if (!copy.defined()) copy = frozen->weight;
      EXPECT_TRUE(frozen->weight.is_same(copy)) << "the copy moved";
      EXPECT_TRUE(at::equal(frozen->weight, weight.to(at::kBFloat16)));
    });
    return g_counts[0].load();
  };
  EXPECT_EQ(copies_in_a_cast(), 1);
  EXPECT_EQ(copies_in_a_cast(), 0);
  {
    torch::NoGradGuard no_grad;
    weight.mul_(2);  // a checkpoint loaded, EMA's swap: an in-place write
  }
  EXPECT_EQ(copies_in_a_cast(), 1);
  EXPECT_TRUE(frozen->weight.is_same(weight));
}

// The training step and validation batch the casts of a built-in model under bf16-mixed, and a run
// gives the same weights and validation figures bit for bit as one with autocast's casts
// (GPUTRAIN_WEIGHT_CASTS=per-layer).
TEST(WeightCasts, TrainingAndValidationBatchThemAndGiveAutocastsFiguresBitForBit) {
  for (const char* model : {"mlp", "small_cnn", "mlp, its first layer frozen"}) {
    SCOPED_TRACE(model);
    const bool cnn = std::strcmp(model, "small_cnn") == 0;
    std::vector<std::string> overrides = {cnn ? "model.name=small_cnn" : "model.name=mlp", cnn ? "data.shape=[3, 8, 8]" : "data.shape=[10]",
                                          "train.precision=bf16-mixed", "train.epochs=1"};
    if (std::strstr(model, "frozen")) overrides.push_back("train.freeze=[1]");
    struct Run {
      NamedTensors state;
      double val_loss = 0;
      int casts = 0;
    };
    const auto fit = [&](bool per_layer) {
      if (per_layer) setenv("GPUTRAIN_WEIGHT_CASTS", "per-layer", 1);
      Run run;
      count_operators("gputrain::weight_casts", "", [&] {
        Trainer trainer(test_support::small_run(std::string("weight-casts-") + std::to_string(std::strlen(model)), overrides),
                        test_support::quiet_trainer());
        run.val_loss = trainer.fit().last_epoch.value().val_loss.value();
        for (const auto& [name, t] : trainer.model().named_state()) run.state.emplace_back(name, t.clone());
      });
      unsetenv("GPUTRAIN_WEIGHT_CASTS");
      run.casts = g_counts[0];
      return run;
    };
    const auto batched = fit(false), per_layer = fit(true);
    EXPECT_EQ(batched.casts, 7) << "one batched cast a step (96 samples in batches of 16) and one for the validation pass";
    EXPECT_EQ(per_layer.casts, 0);
    EXPECT_EQ(batched.val_loss, per_layer.val_loss);
    ASSERT_EQ(batched.state.size(), per_layer.state.size());
    for (std::size_t i = 0; i < batched.state.size(); ++i)
      EXPECT_TRUE(at::equal(batched.state[i].second, per_layer.state[i].second)) << batched.state[i].first;
  }
}
