#include <gtest/gtest.h>

#include "gputrain/checks/gpu_specs.hpp"

using namespace gputrain::checks;

TEST(GpuSpecs, MostSpecificModelWins) {
  EXPECT_EQ(find_gpu_spec("NVIDIA H100 PCIe")->memory_bandwidth_gbps, 2000);
  EXPECT_EQ(find_gpu_spec("NVIDIA H100 80GB HBM3")->memory_bandwidth_gbps, 3350);
  EXPECT_EQ(find_gpu_spec("NVIDIA H200")->memory_bandwidth_gbps, 4800);
  EXPECT_EQ(find_gpu_spec("NVIDIA L40S")->bf16_tflops, 366);
  EXPECT_EQ(find_gpu_spec("NVIDIA L4")->memory_bandwidth_gbps, 300);
  EXPECT_FALSE(find_gpu_spec("Some Future GPU").has_value());
}

TEST(PcieBandwidth, EncodingAwarePerDirectionFigures) {
  EXPECT_NEAR(pcie_bandwidth_gbps(3, 16), 15.75, 0.01);
  EXPECT_NEAR(pcie_bandwidth_gbps(4, 16), 31.51, 0.01);
  EXPECT_NEAR(pcie_bandwidth_gbps(5, 16), 63.02, 0.01);
  EXPECT_NEAR(pcie_bandwidth_gbps(1, 1), 0.25, 1e-9);
  EXPECT_EQ(pcie_bandwidth_gbps(0, 16), 0);
}
