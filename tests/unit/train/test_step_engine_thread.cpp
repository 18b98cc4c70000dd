// Where the CPU step runs: on the loop's own thread until an attempt runs out of memory, then on a
// thread of its own, which takes with it what a failed attempt leaves held; the batch-size probes
// there from the start. While it steps there, the loop's thread runs its own parallel work alone
// (a second OpenMP team beside the step's made steps 2.3x slower on 2 cores).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <thread>

#include "gputrain/train/amp.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/optimizer.hpp"
#include "gputrain/train/run_setup.hpp"
#include "support/small_run.hpp"
#include "train/step/step_engine.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

struct EngineRig {
  Config config = test_support::small_run("step-engine-thread");
  std::unique_ptr<Model> model = build_model(ModelSpec{config.model, config.data.shape, model_outputs(config)});
  std::vector<at::Tensor> params = model->parameters();
  std::unique_ptr<torch::optim::Optimizer> optimizer = make_optimizer(config.optimizer, params);
  GradScaler scaler{false, c10::Device(c10::kCPU)};
  data::BatchTransform transform;
  StepEngine engine{
      StepParts{*model, *optimizer, scaler, params, transform, config.train, false, true, c10::Device(c10::kCPU), nullptr, {}, nullptr}};

  std::thread::id where_work_runs() {
    std::thread::id id;
    engine.on_step_thread([&] { id = std::this_thread::get_id(); });
    return id;
  }
};

}  // namespace

TEST(StepEngineThread, ATrainingLoopStepsOnItsOwnThreadUntilItRunsOutOfMemory) {
  EngineRig rig;
  EXPECT_EQ(rig.where_work_runs(), std::this_thread::get_id());
  rig.engine.after_out_of_memory();
  const auto first = rig.where_work_runs();
  EXPECT_NE(first, std::this_thread::get_id());
  EXPECT_EQ(rig.where_work_runs(), first) << "one thread until the next out-of-memory error";
  rig.engine.after_out_of_memory();
  EXPECT_NE(rig.where_work_runs(), std::this_thread::get_id());
}

TEST(StepEngineThread, WorkThatLooksForTheEdgeOfMemoryStepsOnAThreadFromTheStart) {
  EngineRig rig;
  rig.engine.expect_out_of_memory();
  EXPECT_NE(rig.where_work_runs(), std::this_thread::get_id());
}

TEST(StepEngineThread, TheLoopsThreadRunsItsParallelWorkAloneWhileTheStepThreadSteps) {
  const int threads = at::get_num_threads();  // the loop's, before there is a step thread
  if (threads < 2) GTEST_SKIP() << "one OpenMP thread here: nothing to give up";
  EngineRig rig;
  rig.engine.after_out_of_memory();
  int on_step_thread = 0;
  rig.engine.on_step_thread([&] { on_step_thread = at::get_num_threads(); });
  EXPECT_EQ(on_step_thread, threads) << "the step's parallel work keeps every thread";
  EXPECT_EQ(at::get_num_threads(), 1) << "the loop's own parallel work runs alone beside it";
  rig.engine.after_out_of_memory();  // the step thread goes (a new one comes with the next work)
  EXPECT_EQ(at::get_num_threads(), threads) << "the loop's threads come back with the step thread's end";
  rig.engine.on_step_thread([] {});
  EXPECT_EQ(at::get_num_threads(), 1);
}

TEST(StepEngineThread, ValidationBetweenStepsRunsWhereTheStepRuns) {
  EngineRig rig;
  rig.engine.after_out_of_memory();
  const auto step_thread = rig.where_work_runs();
  std::thread::id validation;
  rig.engine.between_steps([&] { validation = std::this_thread::get_id(); });
  EXPECT_EQ(validation, step_thread);
}
