// The eager step's read-outs that a captured step builds on (graph_step.cpp): the gradients it
// applied, held without a copy (a graph keeps them in its pool, and a logged step measures their
// norm after its replay), and that norm, which is the one the step measures itself.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "gputrain/data/batch.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/optimizer.hpp"
#include "gputrain/train/run_setup.hpp"
#include "support/small_run.hpp"
#include "train/step/grad_clip.hpp"
#include "train/step/step_engine.hpp"

using namespace gputrain;
using namespace gputrain::train;

TEST(HeldGradients, TheStepHoldsTheGradientsItAppliedAndTheirNormIsTheOneItMeasures) {
  const auto config = test_support::small_run("held-gradients");
  auto model = build_model(ModelSpec{config.model, config.data.shape, model_outputs(config)});
  auto params = model->parameters();
  auto optimizer = make_optimizer(config.optimizer, params);
  GradScaler scaler(false, c10::Device(c10::kCPU));
  const data::BatchTransform transform;
  GradientReadout readout;
  StepEngine engine(
      StepParts{*model, *optimizer, scaler, params, transform, config.train, false, true, c10::Device(c10::kCPU), nullptr, {}, &readout});
  at::manual_seed(5);
  std::vector<std::int64_t> shape{8};
  shape.insert(shape.end(), config.data.shape.begin(), config.data.shape.end());
  const data::Batch batch{at::randn(shape), at::randint(0, model_outputs(config), {8}, at::kLong)};

  readout.hold_gradients = readout.keep_gradients = readout.wanted = true;
  (void)engine.accumulate(batch, 8);
  engine.apply();
  ASSERT_FALSE(readout.held.empty());
  ASSERT_EQ(readout.held.size(), readout.gradients.size());
  for (std::size_t i = 0; i < readout.held.size(); ++i) {
    EXPECT_TRUE(at::equal(readout.held[i], readout.gradients[i])) << "parameter " << i;
    EXPECT_FALSE(params[i].grad().defined()) << "the step still ends with the gradients set to none";
  }
  EXPECT_TRUE(at::equal(gradients_norm(readout.held), readout.value));

  readout.held.clear();
  readout.hold_gradients = false;
  (void)engine.accumulate(batch, 8);
  engine.apply();
  EXPECT_TRUE(readout.held.empty()) << "held only when asked";
}
