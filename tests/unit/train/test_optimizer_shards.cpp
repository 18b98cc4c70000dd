// distributed.shard_optimizer's pieces on one process: how the parameters are split among ranks,
// and an optimizer told to step only its own share (the two-rank run is tests/dist's).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/optim/optimizer.h>

#include <vector>

#include "gputrain/train/config.hpp"
#include "gputrain/train/optimizer.hpp"
#include "train/step/optimizer_shards.hpp"

using namespace gputrain::train;

TEST(ShardOwners, GiveTheLargestParametersFirstToTheLeastLoadedRank) {
  // 100 -> rank 0; 60 and then 50 -> rank 1 (60 < 100); 10 -> rank 0 (100 < 110); 5: a tie, the lower rank.
  EXPECT_EQ(shard_owners({100, 60, 50, 10, 5}, 2), (std::vector<int>{0, 1, 1, 0, 0}));
  EXPECT_EQ(shard_owners({10, 10, 10, 10}, 2), (std::vector<int>{0, 1, 0, 1})) << "equal sizes alternate, in order";
  EXPECT_EQ(shard_owners({7, 3}, 1), (std::vector<int>{0, 0}));
  EXPECT_EQ(shard_owners({7}, 3), (std::vector<int>{0})) << "more ranks than parameters: some own none";
  EXPECT_TRUE(shard_owners({}, 4).empty());
}

TEST(ShardOwners, KeepTheSharesWithinOneParameterOfEachOther) {
  std::vector<std::int64_t> sizes;
  for (int k = 0; k < 40; ++k) sizes.push_back(1 + (k * 37) % 101);
  for (int world : {2, 3, 8}) {
    std::vector<std::int64_t> load(static_cast<std::size_t>(world), 0);
    const auto owners = shard_owners(sizes, world);
    for (std::size_t k = 0; k < sizes.size(); ++k) load[static_cast<std::size_t>(owners[k])] += sizes[k];
    const auto [least, most] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*most - *least, 101) << world << " ranks";
  }
}

namespace {

std::vector<at::Tensor> three_parameters() {
  at::manual_seed(3);
  return {at::randn({8, 4}).requires_grad_(true), at::randn({8}).requires_grad_(true), at::randn({3, 8}).requires_grad_(true)};
}

std::vector<at::Tensor> copies(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

void step_with_gradients(torch::optim::Optimizer& optimizer, std::vector<at::Tensor>& params, int step) {
  for (std::size_t k = 0; k < params.size(); ++k)
    params[k].mutable_grad() = at::cos(params[k].detach() * (0.5 + 0.1 * step) + static_cast<double>(k));
  optimizer.step();
}

OptimizerConfig config_of(const std::string& name) {
  OptimizerConfig c;
  c.name = name;
  c.lr = 0.05;
  c.momentum = 0.9;
  c.weight_decay = 0.01;
  return c;
}

}  // namespace

// Parameters 0 and 2 are this rank's: they move exactly as an unsharded optimizer moves them and
// have state; parameter 1 is left for its owner, untouched, its gradient kept for the clipping.
TEST(StepOnly, UpdatesOnlyTheOwnParametersAndKeepsStateForThemOnly) {
  for (const auto* name : {"sgd", "adam", "adamw"}) {
    auto mine = three_parameters();
    auto all = copies(mine);
    const auto before = mine[1].detach().clone();
    auto sharded = make_optimizer(config_of(name), mine);
    auto whole = make_optimizer(config_of(name), all);
    device_stepped(*sharded)->step_only({mine[0], mine[2]});
    for (int step = 0; step < 3; ++step) {
      step_with_gradients(*sharded, mine, step);
      step_with_gradients(*whole, all, step);
    }
    EXPECT_TRUE(at::equal(mine[0], all[0])) << name;
    EXPECT_TRUE(at::equal(mine[2], all[2])) << name;
    EXPECT_TRUE(at::equal(mine[1], before)) << name << ": another rank's parameter was updated";
    EXPECT_TRUE(mine[1].grad().defined()) << name;
    EXPECT_EQ(sharded->state().size(), 2U) << name;
    EXPECT_EQ(sharded->state().count(mine[1].unsafeGetTensorImpl()), 0U) << name;
    EXPECT_EQ(optimizer_state_bytes(*sharded) * 64, optimizer_state_bytes(*whole) * (32 + 24))
        << name << ": the state of 56 of 64 elements";
  }
}

// A closure takes LibTorch's own step, which updates every parameter with a gradient: the
// others' gradients are hidden from it, and given back after.
TEST(StepOnly, HoldsForLibTorchsOwnStepToo) {
  auto params = three_parameters();
  const auto before = params[1].detach().clone();
  auto optimizer = make_optimizer(config_of("adamw"), params);
  device_stepped(*optimizer)->step_only({params[0]});
  for (std::size_t k = 0; k < params.size(); ++k) params[k].mutable_grad() = at::ones_like(params[k]);
  const auto grad = params[1].grad();
  optimizer->step([] { return at::zeros({}); });
  EXPECT_FALSE(device_stepped(*optimizer)->last_step_fused());
  EXPECT_TRUE(at::equal(params[1], before));
  EXPECT_TRUE(params[1].grad().is_same(grad)) << "the hidden gradient was not given back";
  EXPECT_EQ(optimizer->state().size(), 1U);
}

TEST(OptimizerStateBytes, CountsMomentsAndMomentumBuffers) {
  auto params = three_parameters();
  auto adamw = make_optimizer(config_of("adamw"), params);
  EXPECT_EQ(optimizer_state_bytes(*adamw), 0);
  step_with_gradients(*adamw, params, 0);
  EXPECT_EQ(optimizer_state_bytes(*adamw), 2 * 4 * 64);
  auto sgd = make_optimizer(config_of("sgd"), params);
  step_with_gradients(*sgd, params, 0);
  EXPECT_EQ(optimizer_state_bytes(*sgd), 4 * 64);
}

TEST(OwnParameters, AreTheOptimizersInItsOrderThatTheRankOwns) {
  auto params = three_parameters();  // 32, 8 and 24 elements: 32 -> rank 0, 24 -> rank 1, 8 -> rank 1
  auto optimizer = make_optimizer(config_of("sgd"), params);
  const auto zero = own_parameters(*optimizer, 0, 2), one = own_parameters(*optimizer, 1, 2);
  ASSERT_EQ(zero.size(), 1U);
  ASSERT_EQ(one.size(), 2U);
  EXPECT_TRUE(zero[0].is_same(params[0]));
  EXPECT_TRUE(one[0].is_same(params[1]));
  EXPECT_TRUE(one[1].is_same(params[2]));
}
