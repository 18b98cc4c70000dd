#include <gtest/gtest.h>

#include "gputrain/train/lr_schedule.hpp"

using namespace gputrain::train;

TEST(LrSchedule, NoneIsConstantAfterLinearWarmup) {
  SchedulerConfig c;
  c.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 0, 100), 0.25);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 3, 100), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 50, 100), 1.0);
}

TEST(LrSchedule, StepDecaysByGammaEveryStepSize) {
  SchedulerConfig c;
  c.name = "step";
  c.step_size = 10;
  c.gamma = 0.5;
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 9, 100), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 10, 100), 0.5);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 25, 100), 0.25);
}

TEST(LrSchedule, CosineRunsFromBaseToMinAtTheLastStep) {
  SchedulerConfig c;
  c.name = "cosine";
  c.min_lr = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 0, 11), 1.0);
  EXPECT_NEAR(learning_rate_at(c, 1.0, 5, 11), 0.55, 1e-12);
  EXPECT_NEAR(learning_rate_at(c, 1.0, 10, 11), 0.1, 1e-12);
}

// Values from torch.optim.lr_scheduler.OneCycleLR(max_lr=1.0, total_steps=100) (pct_start 0.3).
TEST(LrSchedule, OneCycleMatchesPyTorch) {
  SchedulerConfig c;
  c.name = "onecycle";
  EXPECT_NEAR(learning_rate_at(c, 1.0, 0, 100), 0.04, 1e-12);
  EXPECT_NEAR(learning_rate_at(c, 1.0, 29, 100), 1.0, 1e-12);
  EXPECT_NEAR(learning_rate_at(c, 1.0, 99, 100), 4e-6, 1e-12);
  EXPECT_NEAR(learning_rate_at(c, 1.0, 10, 100), 0.29516394846410077, 1e-12);
  EXPECT_NEAR(learning_rate_at(c, 1.0, 50, 100), 0.793893450575732, 1e-12);
}

TEST(LrSchedule, PlateauIsTheRateTimesItsDecaysButNeverBelowTheFloor) {
  SchedulerConfig c;
  c.name = "plateau";
  c.warmup_steps = 4;
  c.min_lr = 0.05;
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 0, 100), 0.25);  // warm-up as any schedule's
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 50, 100), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 50, 100, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 50, 100, 0.01), 0.05);  // held at min_lr
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 1, 100, 0.01), 0.025);  // warm-up's rate is not raised
  c.min_lr = 2.0;                                                   // a floor above the rate does not raise it either
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 50, 100, 0.5), 1.0);
  c.name = "none";  // the scale is plateau's alone
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1.0, 50, 100, 0.1), 1.0);
}

// What a run should hear before its first step: a rate of 0, a warm-up as long as the run, a step
// schedule that never decays within it; nothing for a schedule that fits.
TEST(LrSchedule, NotesSayWhenTheRatesCannotDoWhatTheSettingsSuggest) {
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  EXPECT_TRUE(schedule_notes(optimizer, scheduler, 100).empty());
  optimizer.lr = 0;
  ASSERT_EQ(schedule_notes(optimizer, scheduler, 100).size(), 1U);
  EXPECT_EQ(schedule_notes(optimizer, scheduler, 100)[0].rfind("warning: optimizer.lr is 0: no step changes a weight", 0), 0U);
  optimizer.param_groups = {ParamGroupConfig{{"fc"}, 0.01, std::nullopt}};  // a group that trains
  EXPECT_TRUE(schedule_notes(optimizer, scheduler, 100).empty());
  optimizer = OptimizerConfig();
  scheduler.warmup_steps = 100;
  EXPECT_EQ(schedule_notes(optimizer, scheduler, 100),
            std::vector<std::string>{"note: scheduler.warmup_steps 100 is as long as the run's 100 steps or longer: the learning rate "
                                     "rises all run and never reaches optimizer.lr"});
  scheduler = SchedulerConfig();
  scheduler.name = "step";
  EXPECT_EQ(schedule_notes(optimizer, scheduler, 500),
            std::vector<std::string>{"note: scheduler.step_size 1000 is past the run's 500 steps: the learning rate never decays; lower "
                                     "scheduler.step_size"});
  EXPECT_TRUE(schedule_notes(optimizer, scheduler, 5000).empty());
}
