#include <gtest/gtest.h>

#include "gputrain/device/gpu_info.hpp"

using namespace gputrain::device;

TEST(ProcDriverVersion, ReadsProprietaryAndOpenKernelModules) {
  EXPECT_EQ(parse_proc_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu Sep 25 2025\n"), "580.95.05");
  EXPECT_EQ(parse_proc_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build"), "575.57.08");
  EXPECT_EQ(parse_proc_driver_version("garbage"), "");
}

TEST(ThrottleReasons, NamesBitsAndSeparatesHarmfulOnes) {
  EXPECT_EQ(throttle_reason_names(0x1 | 0x4), (std::vector<std::string>{"gpu_idle", "sw_power_cap"}));
  EXPECT_EQ(harmful_throttle_reasons(0x1 | 0x2 | 0x100), 0u);
  EXPECT_EQ(harmful_throttle_reasons(0x1 | 0x40), 0x40u);
  EXPECT_EQ(harmful_throttle_reasons(0x4), 0x4u);  // power-capped while idle is a fault
  // Under a full-load burn the power cap is by design (an H100 burn sits at its 700 W limit);
  // heat and hardware slowdown are not.
  EXPECT_EQ(harmful_throttle_reasons_under_load(0x4), 0u);
  EXPECT_EQ(harmful_throttle_reasons_under_load(0x4 | 0x20 | 0x8), 0x28u);
}

TEST(DiscoverGpus, NeverThrowsAndExplainsAnEmptyAnswer) {
  const auto inventory = discover_gpus();
  if (inventory.gpus.empty()) {
    EXPECT_TRUE(!inventory.driver.cuda_loaded || !inventory.notes.empty() || inventory.nvml_device_count == 0);
    if (!inventory.driver.cuda_loaded) {
      EXPECT_FALSE(inventory.driver.cuda_error.empty());
    }
  } else {
    EXPECT_FALSE(inventory.gpus.front().name.empty());
    EXPECT_GT(inventory.gpus.front().memory_total, 0u);
  }
}
