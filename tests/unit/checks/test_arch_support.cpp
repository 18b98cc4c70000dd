#include <gtest/gtest.h>

#include "gputrain/checks/arch_support.hpp"

using namespace gputrain::checks;

TEST(ArchFlags, ParsesGencodeLists) {
  const auto targets = parse_arch_flags(
      "NVCC architecture flags: -gencode;arch=compute_75,code=sm_75;-gencode;arch=compute_90a,code=sm_90a;"
      "-gencode;arch=compute_120,code=[sm_120,compute_120]\n");
  EXPECT_EQ(targets, (std::vector<std::string>{"sm_75", "sm_90a", "sm_120"}));
  EXPECT_TRUE(parse_arch_flags("nothing here").empty());
}

TEST(ArchCoverage, SassRunsOnTheSameMajorWithEqualOrHigherMinor) {
  const std::vector<std::string> wheel{"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"};
  EXPECT_TRUE(targets_cover(wheel, 8, 9));  // L4/4090 run sm_86 code
  EXPECT_TRUE(targets_cover(wheel, 9, 0));  // H100/H200
  EXPECT_TRUE(targets_cover(wheel, 7, 5));
  EXPECT_FALSE(targets_cover(wheel, 7, 0));  // V100: not in this build
  EXPECT_FALSE(targets_cover({"sm_80"}, 9, 0));
}

TEST(ArchCoverage, ArchSpecificSassOnlyOnItsExactCapabilityAndPtxJitsForward) {
  EXPECT_TRUE(targets_cover({"sm_90a"}, 9, 0));
  EXPECT_FALSE(targets_cover({"sm_90a"}, 9, 1));
  EXPECT_TRUE(targets_cover({"compute_90"}, 12, 0));
  EXPECT_FALSE(targets_cover({"compute_90"}, 8, 6));
}
