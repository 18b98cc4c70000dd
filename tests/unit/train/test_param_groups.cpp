// optimizer.param_groups (#50): parameters grouped by name prefix, each group with its own rate and
// weight decay, the schedule applied to each group's own base rate.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>

#include "gputrain/train/config.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/optimizer.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/usage_errors.hpp"
#include "train/step/param_groups.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

// The names and shapes of a ResNet's parameters that matter here.
NamedTensors resnet_like() {
  return {{"conv1.weight", at::zeros({4})},   {"layer1.0.conv1.weight", at::zeros({4})}, {"layer4.0.conv1.weight", at::zeros({4})},
          {"layer40.weight", at::zeros({4})}, {"fc.weight", at::zeros({3, 4})},          {"fc.bias", at::zeros({3})}};
}

OptimizerConfig with_groups(const std::string& yaml) { return load_config({{}, {"optimizer.param_groups=" + yaml}, ""}).optimizer; }

std::size_t group_of(const ParamGroupPlan& plan, const at::Tensor& t) {
  for (std::size_t g = 0; g < plan.params.size(); ++g)
    for (const auto& p : plan.params[g])
      if (p.is_same(t)) return g;
  return plan.params.size();
}

}  // namespace

TEST(ParamGroups, EachParameterJoinsTheFirstEntryNamingItElseTheDefault) {
  const auto named = resnet_like();
  const auto plan =
      plan_param_groups(with_groups("[{params: [layer4, fc], lr: 1.0e-3}, {params: default, lr: 1.0e-4, weight_decay: 0.05}]"), named);
  ASSERT_EQ(plan.params.size(), 2U);
  EXPECT_EQ(plan.lrs, (std::vector<double>{1e-3, 1e-4}));
  EXPECT_EQ(plan.weight_decays, (std::vector<double>{0.0, 0.05}));
  EXPECT_EQ(group_of(plan, named[2].second), 0U);  // layer4.0.conv1.weight
  EXPECT_EQ(group_of(plan, named[3].second), 1U);  // layer40 is not layer4
  EXPECT_EQ(group_of(plan, named[5].second), 0U);  // fc.bias
  EXPECT_EQ(group_of(plan, named[0].second), 1U);  // conv1: the default
}

TEST(ParamGroups, WithoutADefaultEntryTheRestTrainAtTheOptimizersRate) {
  auto config = with_groups("[{params: [fc], lr: 0.5}]");
  config.lr = 0.01;
  const auto plan = plan_param_groups(config, resnet_like());
  ASSERT_EQ(plan.params.size(), 2U);
  EXPECT_EQ(plan.lrs, (std::vector<double>{0.5, 0.01}));
  EXPECT_EQ(plan.params[0].size(), 2U);
  EXPECT_EQ(plan.params[1].size(), 4U);
}

TEST(ParamGroups, MistakesNameTheEntry) {
  const auto typo = test_support::usage_error_and_fix([] { plan_param_groups(with_groups("[{params: [layr4]}]"), resnet_like()); });
  EXPECT_NE(typo.find("optimizer.param_groups[0]: 'layr4' names no parameter that trains; did you mean 'layer4'?"), std::string::npos)
      << typo;
  const auto twice =
      test_support::usage_error([] { plan_param_groups(with_groups("[{params: default}, {params: [fc, default]}]"), resnet_like()); });
  EXPECT_NE(twice.find("optimizer.param_groups[1] is a second default group"), std::string::npos) << twice;
  const auto key = test_support::usage_error_and_fix([] { with_groups("[{params: [fc], learning_rate: 0.1}]"); });
  EXPECT_NE(key.find("optimizer.param_groups[0].learning_rate"), std::string::npos) << key;
  EXPECT_NE(test_support::usage_error([] { with_groups("[{lr: 0.1}]"); }).find("optimizer.param_groups[0] names no parameters"),
            std::string::npos);
  EXPECT_NE(test_support::usage_error([] { with_groups("[{params: [fc], lr: -1}]"); }).find("optimizer.param_groups[0].lr"),
            std::string::npos);
  const auto shown = load_config({{}, {"optimizer.param_groups=[{params: [fc], lr: 0.5}]"}, ""});
  EXPECT_NE(to_yaml(shown).find("param_groups:\n    - {params: [fc], lr: 0.5}"), std::string::npos) << to_yaml(shown);
}

// A parameter joins the first entry naming it: a narrower entry after a wider one got nothing, and
// its rate applied to no parameter, silently. Refused with the order that works; a partial overlap
// stays allowed (the first entry keeps what it names).
TEST(ParamGroups, AnEntryAnEarlierOneTookWholeIsRefusedWithTheOrderThatWorks) {
  const auto shadowed = test_support::usage_error_and_fix(
      [] { plan_param_groups(with_groups("[{params: [layer4, fc], lr: 0.5}, {params: [fc], lr: 0.1}]"), resnet_like()); });
  EXPECT_NE(shadowed.find("optimizer.param_groups[1] (fc) applies to no parameter: [0] names them first (fc.weight among them), and a "
                          "parameter joins the first entry naming it\nput the narrower entry first: [1] before [0]"),
            std::string::npos)
      << shadowed;
  const auto narrower_first = plan_param_groups(with_groups("[{params: [fc], lr: 0.1}, {params: [layer4, fc], lr: 0.5}]"), resnet_like());
  EXPECT_EQ(narrower_first.lrs, (std::vector<double>{0.1, 0.5, 1.0e-3}));
  const auto partial = plan_param_groups(with_groups("[{params: [fc], lr: 0.1}, {params: [fc, conv1], lr: 0.5}]"), resnet_like());
  EXPECT_EQ(partial.params[1].size(), 1U);  // conv1 alone
}

// The schedule scales each group's own base, as PyTorch's schedulers do with each group's initial_lr.
TEST(ParamGroups, TheScheduleAppliesToEachGroupsBase) {
  auto model = at::zeros({2}, at::requires_grad());
  auto head = at::zeros({2}, at::requires_grad());
  std::vector<double> bases;
  auto config = with_groups("[{params: [head], lr: 0.1}]");
  config.lr = 0.01;
  auto optimizer = make_optimizer(config, {{"body", model}, {"head", head}}, bases);
  EXPECT_EQ(bases, (std::vector<double>{0.1, 0.01}));
  SchedulerConfig cosine;
  cosine.name = "cosine";
  set_learning_rates(*optimizer, bases, [&](double base) { return learning_rate_at(cosine, base, 5, 10, 1.0); });
  EXPECT_DOUBLE_EQ(optimizer->param_groups()[0].options().get_lr(), learning_rate_at(cosine, 0.1, 5, 10, 1.0));
  EXPECT_DOUBLE_EQ(optimizer->param_groups()[1].options().get_lr(), learning_rate_at(cosine, 0.01, 5, 10, 1.0));
}

// A group at rate 0 does not move while the rest trains.
TEST(ParamGroups, ARunTrainsEachGroupAtItsRate) {
  const auto config = test_support::small_run("param-groups", {"optimizer.param_groups=[{params: ['1'], lr: 0}]", "model.dropout=0"});
  Trainer trainer(config, test_support::quiet_trainer());
  std::map<std::string, at::Tensor> before;
  for (const auto& [name, t] : trainer.model().named_state()) before[name] = t.clone();
  trainer.fit();
  for (const auto& [name, t] : trainer.model().named_state()) {
    if (name.rfind("1.", 0) == 0) {
      EXPECT_TRUE(at::equal(t, before[name])) << name << " is in the group of rate 0";
    } else if (name.find("weight") != std::string::npos) {
      EXPECT_FALSE(at::equal(t, before[name])) << name << " trains at optimizer.lr";
    }
  }
}
