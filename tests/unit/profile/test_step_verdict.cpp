// profile --step's verdict: which of data, host and GPU limits a step.
#include <gtest/gtest.h>

#include "gputrain/profile/step_verdict.hpp"

using namespace gputrain::profile;

TEST(StepVerdict, AStallAboveTenPercentIsTheDataWhateverTheGpuDoes) {
  EXPECT_EQ(judge_step(10.5, std::nullopt), StepVerdict::data_starved);
  EXPECT_EQ(judge_step(25, 30.0), StepVerdict::data_starved);
  EXPECT_EQ(judge_step(25, 95.0), StepVerdict::data_starved);
  EXPECT_NE(advice(StepVerdict::data_starved).find("data.cache: vram"), std::string::npos);
}

// The H100 case: ResNet-18 at batch 256, 0.7 % stall, GPU busy 52 %: not the data.
TEST(StepVerdict, AnIdleGpuWithTheDataKeepingUpIsTheHost) {
  EXPECT_EQ(judge_step(0.7, 52.0), StepVerdict::host_bound);
  EXPECT_EQ(judge_step(10, 69.9), StepVerdict::host_bound);
  EXPECT_STREQ(to_string(StepVerdict::host_bound), "host-bound");
  const auto text = advice(StepVerdict::host_bound);
  EXPECT_NE(text.find("train.batch_size"), std::string::npos);
  EXPECT_NE(text.find("faster loader will not"), std::string::npos);
}

TEST(StepVerdict, ABusyGpuOrNoUtilisationFigureWithLittleStallIsCompute) {
  EXPECT_EQ(judge_step(0.7, 70.0), StepVerdict::compute_bound);
  EXPECT_EQ(judge_step(1.2, std::nullopt), StepVerdict::compute_bound);  // the CPU, or no NVML
  EXPECT_STREQ(to_string(StepVerdict::compute_bound), "compute-bound");
  EXPECT_STREQ(to_string(StepVerdict::data_starved), "data-starved");
}
