// train.activation_checkpointing: recomputed blocks give the plain run's gradients bit for bit
// (batch norm, dropout), hold less memory, size the batch with it, and refuse what cannot.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/train/batch_size.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/module_less_model.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/tensor_checks.hpp"
#include "support/usage_errors.hpp"
#include "train/models/frozen_model.hpp"
#include "train/setup/activation_checkpointing_setup.hpp"
#include "train/step/graph_plan.hpp"

using namespace gputrain;
using namespace gputrain::train;
using test_support::flat_parameters;
using test_support::small_run;

namespace {

std::unique_ptr<Model> tiny_resnet() {
  ModelConfig c;
  c.name = "resnet18";
  at::manual_seed(1);
  return build_model(ModelSpec{c, {3, 8, 8}, 4});
}

struct Pass {
  std::vector<at::Tensor> gradients, state;
  std::uint64_t held_after_forward = 0;   // bytes the forward left for backward
  std::uint64_t held_after_backward = 0;  // the gradients, and nothing else
};

Pass train_pass(Model& model, const at::Tensor& x, const at::Tensor& y) {
  memory::install_counting_cpu_allocator();
  model.set_training(true);
  Pass pass;
  const auto before = memory::cpu_memory_stats().allocated;
  const auto loss = at::cross_entropy_loss(model.forward(x), y);
  pass.held_after_forward = memory::cpu_memory_stats().allocated - before;
  loss.backward();
  pass.held_after_backward = memory::cpu_memory_stats().allocated - before;
  for (auto& p : model.parameters()) pass.gradients.push_back(p.grad().clone());
  for (const auto& [name, tensor] : model.named_state()) pass.state.push_back(tensor.clone());
  return pass;
}

bool all_equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!at::equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST(ActivationCheckpointing, RecomputedResNetBlocksGiveBitIdenticalGradientsAndHoldLess) {
  auto plain = tiny_resnet(), recomputed = tiny_resnet();
  EXPECT_EQ(recompute_blocks(*recomputed, {"*"}),
            "activation checkpointing on 8 of 8 blocks (layer1.0, layer1.1, layer2.0, ... layer4.0, layer4.1): each recomputes its "
            "forward in backward");
  const auto x = at::randn({6, 3, 8, 8}), y = at::randint(0, 4, {6});
  const auto a = train_pass(*plain, x, y), b = train_pass(*recomputed, x, y);
  EXPECT_TRUE(all_equal(a.gradients, b.gradients)) << "the recomputed gradients differ";
  // Batch norm's running statistics moved once, not once more in the recomputation.
  EXPECT_TRUE(all_equal(a.state, b.state)) << "the running statistics differ";
  EXPECT_LT(b.held_after_forward, a.held_after_forward / 2)
      << "recomputing held " << b.held_after_forward << " bytes after the forward, the plain run " << a.held_after_forward;

  EXPECT_EQ(b.held_after_backward, a.held_after_backward) << "the recomputation left memory behind";
  // A stage's prefix picks its blocks; evaluation and no-grad forwards do not recompute.
  EXPECT_NE(recompute_blocks(*recomputed, {"layer3"}).find("on 2 of 8 blocks (layer3.0, layer3.1)"), std::string::npos);
  recomputed->set_training(false);
  plain->set_training(false);
  EXPECT_TRUE(at::equal(recomputed->forward(x), plain->forward(x)));
}

// Dropout's masks are drawn again in the recomputation: the random generators replay.
TEST(ActivationCheckpointing, ATransformerRunWithDropoutTrainsTheSameWeightsBitForBit) {
  const std::vector<std::string> transformer{"model.name=transformer", "model.layers=2",    "model.d_model=16",  "model.heads=2",
                                             "model.ff_dim=32",        "model.dropout=0.3", "data.shape=[6, 5]", "train.epochs=1"};
  auto with = transformer;
  with.push_back("train.activation_checkpointing=[encoder.layers.1]");
  Trainer plain(small_run("recompute-plain", transformer), test_support::quiet_trainer());
  plain.fit();
  Trainer recomputing(small_run("recompute-on", with), test_support::quiet_trainer());
  recomputing.fit();
  EXPECT_TRUE(at::equal(flat_parameters(recomputing), flat_parameters(plain)));
  const auto [result, console] = test_support::fit_capturing_console(small_run("recompute-said", with));
  EXPECT_NE(console.find("activation checkpointing on 1 of 2 blocks (encoder.layers.1)"), std::string::npos) << console;
}

TEST(ActivationCheckpointing, TheBatchProbesMeasureTheRecomputingStep) {
  // SGD without momentum: no optimizer state to outweigh the activations at this small scale.
  auto config =
      small_run("recompute-probe", {"model.name=resnet18", "data.shape=[3, 32, 32]", "optimizer.name=sgd", "optimizer.momentum=0"});
  const auto run = prepare_device(config);
  const auto data = open_data(config);
  const ProbeData probe{probe_samples(data, run.device), data.transform, data.sources.train->size()};
  const auto plain = measure_step_memory(config, run.device, probe, 64);
  config.train.activation_checkpointing = {"*"};
  const auto recomputing = measure_step_memory(config, run.device, probe, 64);
  EXPECT_LT(recomputing, plain * 0.85) << recomputing << " bytes recomputing, " << plain << " plain";
}

TEST(ActivationCheckpointing, TheConfigTakesTrueFalseOrBlockNames) {
  const auto with = [](const std::string& value) { return small_run("recompute-config", {"train.activation_checkpointing=" + value}); };
  EXPECT_EQ(with("true").train.activation_checkpointing, std::vector<std::string>{"*"});
  EXPECT_TRUE(with("false").train.activation_checkpointing.empty());
  EXPECT_EQ(with("[layer3, layer4]").train.activation_checkpointing, (std::vector<std::string>{"layer3", "layer4"}));
  EXPECT_NE(to_yaml(with("true")).find("activation_checkpointing: true"), std::string::npos);
  EXPECT_NE(to_yaml(with("[layer3, layer4]")).find("activation_checkpointing: [layer3, layer4]"), std::string::npos);
}

TEST(ActivationCheckpointing, RefusesModelsWithoutBlocksAndNamesThatMatchNone) {
  const auto mlp = test_support::usage_error_and_fix(
      [] { Trainer trainer(small_run("recompute-mlp", {"train.activation_checkpointing=true"}), test_support::quiet_trainer()); });
  EXPECT_NE(mlp.find("train.activation_checkpointing is on, but mlp has no block that can recompute its forward"), std::string::npos)
      << mlp;
  auto resnet = tiny_resnet();
  const auto unknown = test_support::usage_error_and_fix([&] { recompute_blocks(*resnet, {"layer9"}); });
  EXPECT_NE(unknown.find("names 'layer9', which is no block of resnet18"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("among: layer1.0, layer1.1, layer2.0, ... layer4.0, layer4.1"), std::string::npos) << unknown;
  test_support::ModuleLessModel scripted;
  const auto script = test_support::usage_error([&] { recompute_blocks(scripted, {"*"}); });
  EXPECT_NE(script.find("a TorchScript module (model.torchscript)"), std::string::npos) << script;
}

// Blocks without dropout rewind no generator, so a CUDA-graph step can recompute them; a block
// with dropout keeps the steps eager, and the run says why.
TEST(ActivationCheckpointing, OnlyBlocksThatDrawRandomNumbersKeepStepsOutOfGraphs) {
  auto resnet = tiny_resnet();
  EXPECT_FALSE(recomputation_draws_random_numbers(*resnet));
  recompute_blocks(*resnet, {"*"});
  EXPECT_FALSE(recomputation_draws_random_numbers(*resnet)) << "ResNet blocks draw no random numbers";
  const auto transformer = [](double dropout) {
    ModelConfig c;
    c.name = "transformer";
    c.layers = 2;
    c.d_model = 16;
    c.heads = 2;
    c.ff_dim = 32;
    c.dropout = dropout;
    return build_model(ModelSpec{c, {6, 5}, 4});
  };
  auto with_dropout = transformer(0.1), without = transformer(0.0);
  EXPECT_FALSE(recomputation_draws_random_numbers(*with_dropout)) << "no block recomputes yet";
  recompute_blocks(*with_dropout, {"encoder.layers.1"});
  recompute_blocks(*without, {"*"});
  EXPECT_TRUE(recomputation_draws_random_numbers(*with_dropout));
  EXPECT_FALSE(recomputation_draws_random_numbers(*without));
  // Fine-tuning wraps the model (train.freeze) after its blocks were told to recompute: still seen.
  std::string said;
  const auto frozen = freeze_parameters(std::move(with_dropout), {"embed"}, said);
  EXPECT_TRUE(recomputation_draws_random_numbers(*frozen));

  GraphConditions conditions;
  conditions.cuda = true;
  EXPECT_TRUE(decide_cuda_graphs(conditions).capture);
  conditions.recomputes_random = true;
  const auto decision = decide_cuda_graphs(conditions);
  EXPECT_FALSE(decision.capture);
  EXPECT_EQ(decision.summary(),
            "off (train.activation_checkpointing recomputes blocks that draw random numbers (dropout), whose generators a capture "
            "cannot rewind yet)");
}
