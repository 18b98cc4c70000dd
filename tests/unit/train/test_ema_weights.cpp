// train.ema_decay: the moving average follows its formula step by step, leaves the training and
// the model's own validation figures exactly as they are, is validated beside them, resumes
// exactly, and is written as model_ema.safetensors.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/callback.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"

namespace fs = std::filesystem;
using namespace gputrain;
using namespace gputrain::train;

namespace {

// Copies of the model's tensors when the run starts and after every step, as the formula needs.
class WeightTrail final : public Callback {
 public:
  std::string name() const override { return "weight_trail"; }
  void on_fit_start(RunControl& run) override { snapshot(run); }
  void on_step_end(RunControl& run, std::int64_t) override { snapshot(run); }
  std::vector<NamedTensors> trail;

 private:
  void snapshot(RunControl& run) {
    NamedTensors copy;
    for (const auto& [name, t] : run.model().named_state()) copy.emplace_back(name, t.detach().clone());
    trail.push_back(std::move(copy));
  }
};

struct Run {
  FitResult result;
  NamedTensors weights;
};

Run fit(const Config& config, std::shared_ptr<Callback> extra = nullptr) {
  auto options = test_support::quiet_trainer();
  if (extra) options.callbacks.push_back(extra);
  Trainer trainer(config, options);
  Run run{trainer.fit(), {}};
  for (const auto& [name, t] : trainer.model().named_state()) run.weights.emplace_back(name, t.detach().clone());
  return run;
}

double extra_figure(const EpochMetrics& m, const std::string& name) {
  for (const auto& [key, value] : m.extra)
    if (key == name) return value;
  ADD_FAILURE() << name << " is not among the epoch's figures";
  return 0;
}

}  // namespace

TEST(EmaWeights, FollowTheFormulaEveryNSteps) {
  // 12 steps; the average is updated after steps 3, 6, 9 and 12 only.
  auto config = test_support::small_run("ema-formula", {"train.ema_decay=0.7", "train.ema_every=3"});
  auto trail = std::make_shared<WeightTrail>();
  const auto run = fit(config, trail);
  ASSERT_EQ(trail->trail.size(), 13U);
  NamedTensors expected = trail->trail[0];
  for (std::size_t step = 3; step <= 12; step += 3)
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const auto& w = trail->trail[step][i].second;
      auto& e = expected[i].second;
      e = w.is_floating_point() ? 0.7 * e + 0.3 * w : w.clone();
    }
  const auto written = data::read_safetensors(config.logging.dir + "/model_ema.safetensors");
  ASSERT_EQ(written.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(written[i].first, expected[i].first);
    EXPECT_TRUE(at::allclose(written[i].second, expected[i].second, 1e-5, 1e-6)) << expected[i].first;
  }
  EXPECT_FALSE(at::equal(written[0].second, run.weights[0].second)) << "the average is not the last weights";
}

// The average is validated by swapping it into the model and back: the model's own figures and
// its training are bit for bit those of a run without it.
TEST(EmaWeights, AreValidatedBesideTheModelWithoutChangingIt) {
  const auto plain = fit(test_support::small_run("ema-off"));
  const auto with = fit(test_support::small_run("ema-on", {"train.ema_decay=0.9"}));
  EXPECT_EQ(with.result.last_epoch->val_loss, plain.result.last_epoch->val_loss);
  EXPECT_EQ(with.result.last_epoch->val_accuracy, plain.result.last_epoch->val_accuracy);
  for (std::size_t i = 0; i < plain.weights.size(); ++i)
    EXPECT_TRUE(at::equal(with.weights[i].second, plain.weights[i].second)) << plain.weights[i].first;
  const double ema_loss = extra_figure(*with.result.last_epoch, "val_loss_ema");
  EXPECT_NE(ema_loss, *plain.result.last_epoch->val_loss);
  extra_figure(*with.result.last_epoch, "val_accuracy_ema");

  // A decay near 0 makes the average the weights themselves: the same figures.
  const auto near_zero = fit(test_support::small_run("ema-tiny", {"train.ema_decay=0.000001"}));
  EXPECT_NEAR(extra_figure(*near_zero.result.last_epoch, "val_loss_ema"), *plain.result.last_epoch->val_loss, 1e-5);
}

TEST(EmaWeights, ResumeExactly) {
  const auto whole = fit(test_support::small_run("ema-whole", {"train.ema_decay=0.8"}));
  const auto uninterrupted = data::read_safetensors(test_support::small_run("ema-whole", {}, false).logging.dir + "/model_ema.safetensors");
  fit(test_support::small_run("ema-split", {"train.ema_decay=0.8", "train.epochs=1"}));
  fit(test_support::small_run("ema-split", {"train.ema_decay=0.8"}, /*fresh=*/false));
  const auto resumed = data::read_safetensors(test_support::small_run("ema-split", {}, false).logging.dir + "/model_ema.safetensors");
  ASSERT_EQ(resumed.size(), uninterrupted.size());
  for (std::size_t i = 0; i < resumed.size(); ++i) EXPECT_TRUE(at::equal(resumed[i].second, uninterrupted[i].second)) << resumed[i].first;
}

TEST(EmaWeights, BestMetricMayWatchTheAverage) {
  const auto run = fit(test_support::small_run("ema-best", {"train.ema_decay=0.5", "checkpoint.best_metric=val_loss_ema"}));
  EXPECT_EQ(run.result.steps, 12);
  EXPECT_TRUE(fs::exists(test_support::small_run("ema-best", {}, false).checkpoint_dir() + "/best.pt"));
  try {
    test_support::small_run("ema-best-off", {"checkpoint.best_metric=val_accuracy_ema"});
    FAIL() << "val_accuracy_ema was accepted without train.ema_decay";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint.best_metric val_accuracy_ema is a figure of the weights' moving average, but "
                                         "train.ema_decay is 0"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.remedy().find("set train.ema_decay, e.g. 0.999, or checkpoint.best_metric: val_accuracy"), std::string::npos);
  }
}

// An average whose horizon is longer than the run stays mostly the starting weights, which its
// *_ema figures measured, silently; a run that never updates it, the same. Both are noted, with the
// decay that would reach 1 %; a decay that fits the run says nothing.
TEST(EmaWeights, AnAverageLongerThanTheRunIsNoted) {
  const auto console_of = [](const std::vector<std::string>& settings) {
    return test_support::fit_capturing_console(test_support::small_run("ema-reach", settings)).console;
  };
  const auto slow = console_of({"train.ema_decay=0.999"});  // 12 updates: 98.8 % of the start
  EXPECT_NE(slow.find("note: train.ema_decay 0.999 over the run's 12 updates of the average leaves the starting weights 99 % of the "
                      "average at the end; lower train.ema_decay, e.g. 0.681 (1 % at the end)"),
            std::string::npos)
      << slow;
  const auto never = console_of({"train.ema_decay=0.5", "train.ema_every=13"});
  EXPECT_NE(never.find("note: train.ema_every 13 is more than the run's 12 steps: the moving average is never updated"), std::string::npos)
      << never;
  EXPECT_EQ(console_of({"train.ema_decay=0.9"}).find("note: train.ema_"), std::string::npos);  // 0.9^12: 28 % of the start
}
