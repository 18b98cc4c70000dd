// model.sync_batch_norm in one process: the synchronised math against torch::nn's BatchNorm on a
// world of one, what a one-rank run says, and the models it refuses. Two real ranks:
// tests/dist/test_sync_batch_norm_ranks.cpp.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>

#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/sync_batch_norm.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/module_less_model.hpp"
#include "support/one_rank_communicator.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/tensor_checks.hpp"
#include "support/usage_errors.hpp"
#include "train/models/layers/sync_batch_norm.hpp"
#include "train/setup/sync_batch_norm_setup.hpp"

using namespace gputrain;
using namespace gputrain::train;
using test_support::expect_close;
using test_support::small_run;

namespace {

template <typename Plain, typename Synced>
void expect_plain_batch_norm(const at::Tensor& x, std::optional<double> momentum) {
  const auto channels = x.size(1);
  test_support::OneRankCommunicator one;
  auto options = torch::nn::BatchNormOptions(channels).momentum(momentum);
  Plain plain(options);
  Synced synced(options);
  const auto weight = at::rand({channels}) + 0.5, bias = at::randn({channels});
  for (auto* w : {&plain->weight, &synced->weight}) w->set_data(weight.clone());
  for (auto* b : {&plain->bias, &synced->bias}) b->set_data(bias.clone());
  auto sync = std::make_shared<BatchNormSync>(one);
  synced->synchronise_with(sync, "layer1.bn");
  const auto upstream = at::randn(x.sizes());
  for (int pass = 0; pass < 3; ++pass) {
    const auto a = x.clone().requires_grad_(true), b = x.clone().requires_grad_(true);
    const auto expected = plain->forward(a), out = synced->forward(b);
    (expected * upstream).sum().backward();
    (out * upstream).sum().backward();
    const auto label = "pass " + std::to_string(pass);
    expect_close(out, expected.detach(), "output, " + label);
    expect_close(b.grad(), a.grad(), "input gradient, " + label);
    expect_close(synced->weight.grad(), plain->weight.grad(), "weight gradient, " + label);
    expect_close(synced->bias.grad(), plain->bias.grad(), "bias gradient, " + label);
    expect_close(synced->running_mean, plain->running_mean, "running mean, " + label);
    expect_close(synced->running_var, plain->running_var, "running variance, " + label);
  }
  // Per pass: the statistics gathered in the forward, the gradient sums in the backward.
  ASSERT_EQ(one.exchanges.size(), 6U);
  EXPECT_EQ(one.exchanges[0], "batch-norm statistics of layer1.bn in step 1");
  EXPECT_EQ(one.exchanges[1], "batch-norm gradients of layer1.bn in step 1");
}

// A C++ model of a user's, with the batch-norm layer `Norm`.
template <typename Norm>
struct NormedNetImpl : torch::nn::Module {
  NormedNetImpl(std::int64_t in, std::int64_t out)
      : fc(register_module("fc", torch::nn::Linear(in, 8))),
        norm(register_module("norm", Norm(8))),
        head(register_module("head", torch::nn::Linear(8, out))) {}
  at::Tensor forward(const at::Tensor& x) { return head(torch::relu(norm(fc(x.flatten(1))))); }
  torch::nn::Linear fc;
  Norm norm;
  torch::nn::Linear head;
};

template <typename Norm>
void register_normed_net(const std::string& name) {
  register_model(
      name, [](const ModelSpec& s) { return torch::nn::AnyModule(std::make_shared<NormedNetImpl<Norm>>(s.input_shape.at(0), s.outputs)); });
}

}  // namespace

TEST(SyncBatchNorm, OnOneRankTheSynchronisedMathIsTorchBatchNorm) {
  at::manual_seed(3);
  expect_plain_batch_norm<torch::nn::BatchNorm2d, SyncableBatchNorm2d>(at::randn({6, 4, 5, 3}) * 2 + 1, 0.1);
  expect_plain_batch_norm<torch::nn::BatchNorm2d, SyncableBatchNorm2d>(
      (at::randn({5, 3, 4, 4}) - 2).contiguous(at::MemoryFormat::ChannelsLast), 0.3);
  expect_plain_batch_norm<torch::nn::BatchNorm1d, SyncableBatchNorm1d>(at::randn({7, 5}) * 4, std::nullopt);  // cumulative average
}

TEST(SyncBatchNorm, WithoutASyncTheLayersAreTorchBatchNormWithItsNames) {
  SyncableBatchNorm2d mine(3);
  torch::nn::BatchNorm2d plain(3);
  std::vector<std::string> names, expected;
  for (const auto& item : mine->named_parameters()) names.push_back(item.key());
  for (const auto& item : mine->named_buffers()) names.push_back(item.key());
  for (const auto& item : plain->named_parameters()) expected.push_back(item.key());
  for (const auto& item : plain->named_buffers()) expected.push_back(item.key());
  EXPECT_EQ(names, expected);
  const auto x = at::randn({4, 3, 2, 2});
  EXPECT_TRUE(at::equal(mine->forward(x), plain->forward(x)));
  EXPECT_TRUE(at::equal(mine->running_var, plain->running_var));
}

// forward_relu / forward_add_relu fold a block's epilogue into batch norm's passes on a GPU
// (tests/gpu/test_gpu_batch_norm.cpp); everywhere else they are the composite ops, bit for bit,
// in training and in evaluation, and count one batch.
TEST(SyncBatchNorm, ForwardAddReluOffTheGpuIsBatchNormAddAndRelu) {
  at::manual_seed(5);
  SyncableBatchNorm2d mine(4);
  torch::nn::BatchNorm2d plain(4);
  const auto weight = at::rand({4}) + 0.5, bias = at::randn({4});
  for (auto* w : {&mine->weight, &plain->weight}) w->set_data(weight.clone());
  for (auto* b : {&mine->bias, &plain->bias}) b->set_data(bias.clone());
  const auto x = at::randn({3, 4, 5, 5}).contiguous(at::MemoryFormat::ChannelsLast), residual = at::randn({3, 4, 5, 5});
  EXPECT_FALSE(
      fused_batch_norm(
          x, residual,
          BatchNormTensors{mine->weight, mine->bias, mine->running_mean, mine->running_var, mine->num_batches_tracked, mine->options}, true)
          .has_value());
  const auto x_mine = x.clone().requires_grad_(true), x_plain = x.clone().requires_grad_(true);
  const auto y_mine = mine->forward_add_relu(x_mine, residual), y_plain = at::relu(plain->forward(x_plain) + residual);
  EXPECT_TRUE(at::equal(y_mine, y_plain));
  const auto dy = at::randn_like(y_plain);
  y_mine.backward(dy);
  y_plain.backward(dy);
  EXPECT_TRUE(at::equal(x_mine.grad(), x_plain.grad()));
  EXPECT_TRUE(at::equal(mine->weight.grad(), plain->weight.grad()));
  EXPECT_TRUE(at::equal(mine->running_var, plain->running_var));
  EXPECT_EQ(mine->num_batches_tracked.item<std::int64_t>(), 1);
  EXPECT_TRUE(at::equal(mine->forward_relu(x), at::relu(plain->forward(x))));
  mine->eval();
  plain->eval();
  EXPECT_TRUE(at::equal(mine->forward_add_relu(x, residual), at::relu(plain->forward(x) + residual)));
}

// Off the GPU a forked output is one tensor for both readers: forward_add_relu's, whose readers'
// gradients autograd adds.
TEST(SyncBatchNorm, AForkedOutputOffTheGpuIsOneTensorForBothReaders) {
  at::manual_seed(6);
  SyncableBatchNorm2d forked(4), once(4);
  const auto x = at::randn({3, 4, 5, 5}), residual = at::randn({3, 4, 5, 5});
  BatchNormTensors layer{forked->weight, forked->bias, forked->running_mean, forked->running_var, forked->num_batches_tracked,
                         forked->options};
  EXPECT_FALSE(fused_batch_norm_forked(x, residual, layer).has_value());
  const auto x_forked = x.clone().requires_grad_(true), x_once = x.clone().requires_grad_(true);
  const auto out = forked->forward_relu_forked(x_forked, residual);
  EXPECT_TRUE(out.main.is_same(out.shortcut));
  const auto y = once->forward_add_relu(x_once, residual);
  EXPECT_TRUE(at::equal(out.main, y));
  const auto g_main = at::randn_like(y), g_shortcut = at::randn_like(y);
  torch::autograd::backward({out.main, out.shortcut}, {g_main, g_shortcut});
  y.backward(g_main + g_shortcut);
  EXPECT_TRUE(at::equal(x_forked.grad(), x_once.grad()));
  EXPECT_TRUE(at::equal(forked->weight.grad(), once->weight.grad()));
  EXPECT_TRUE(at::equal(forked->forward_relu_forked(x).main, once->forward_relu(x)));  // no residual
}

TEST(SyncBatchNorm, OneRankSaysItChangesNothing) {
  const auto [result, console] = test_support::fit_capturing_console(
      small_run("sync-bn-one-rank", {"model.norm=batch", "model.sync_batch_norm=true", "train.epochs=1"}));
  EXPECT_EQ(result.steps, 6);
  EXPECT_NE(console.find("note: model.sync_batch_norm: true changes nothing on one rank, whose batch is the whole batch (2 batch-norm "
                         "layers)"),
            std::string::npos)
      << console;
  const auto [plain, plain_console] =
      test_support::fit_capturing_console(small_run("sync-bn-no-norm", {"model.sync_batch_norm=true", "train.epochs=1"}));
  EXPECT_NE(plain_console.find("note: model.sync_batch_norm: true, but mlp has no batch norm: nothing to synchronise"), std::string::npos)
      << plain_console;
}

TEST(SyncBatchNorm, RefusesAModelWhoseBatchNormCannotSynchronise) {
  register_normed_net<torch::nn::BatchNorm1d>("sync_bn_plain_net");
  const auto refused = test_support::usage_error_and_fix([] {
    Trainer trainer(small_run("sync-bn-plain", {"model.name=sync_bn_plain_net", "model.sync_batch_norm=true"}),
                    test_support::quiet_trainer());
  });
  EXPECT_NE(refused.find("model.sync_batch_norm: true, but sync_bn_plain_net's layer norm is torch::nn::BatchNorm"), std::string::npos)
      << refused;
  EXPECT_NE(refused.find("gputrain::train::SyncableBatchNorm1d/2d"), std::string::npos) << refused;

  // The same model built with the syncable layer trains.
  register_normed_net<SyncableBatchNorm1d>("sync_bn_own_net");
  Trainer own(small_run("sync-bn-own", {"model.name=sync_bn_own_net", "model.sync_batch_norm=true", "train.epochs=1"}),
              test_support::quiet_trainer());
  EXPECT_EQ(own.fit().steps, 6);

  test_support::ModuleLessModel scripted;
  const auto script = test_support::usage_error_and_fix([&] { synchronise_batch_norm(scripted, nullptr); });
  EXPECT_NE(script.find("the model is a TorchScript module (model.torchscript)"), std::string::npos) << script;
  EXPECT_NE(script.find("set model.sync_batch_norm: false"), std::string::npos) << script;
}
