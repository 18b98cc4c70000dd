#include <gtest/gtest.h>

#include "gputrain/core/error.hpp"
#include "gputrain/device/select.hpp"

using namespace gputrain;
using namespace gputrain::device;

namespace {
GpuInventory two_gpus() {
  GpuInventory inventory;
  inventory.driver.cuda_loaded = true;
  inventory.gpus.resize(2);
  inventory.gpus[0].index = 0;
  inventory.gpus[0].name = "NVIDIA H100 80GB HBM3";
  inventory.gpus[1].index = 1;
  inventory.gpus[1].name = "NVIDIA H100 80GB HBM3";
  return inventory;
}
GpuInventory no_driver() {
  GpuInventory inventory;
  inventory.driver.cuda_error = "the NVIDIA driver is not installed";
  return inventory;
}
}  // namespace

TEST(SelectDevice, AutoPrefersTheFirstGpuAndFallsBackToCpu) {
  EXPECT_EQ(select_device("auto", two_gpus()).str(), "cuda:0");
  EXPECT_EQ(select_device("auto", no_driver()).str(), "cpu");
  EXPECT_EQ(select_device("cpu", two_gpus()).str(), "cpu");
}

TEST(SelectDevice, CudaAndCudaN) {
  EXPECT_EQ(select_device("cuda", two_gpus()).str(), "cuda:0");
  EXPECT_EQ(select_device("cuda:1", two_gpus()).str(), "cuda:1");
}

TEST(SelectDevice, MissingGpuNamesWhatExists) {
  try {
    select_device("cuda:2", two_gpus());
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(error.remedy().find("cuda:0 (NVIDIA H100 80GB HBM3), cuda:1"), std::string::npos);
  }
}

TEST(SelectDevice, GpuAskedForWithoutOneIsAnEnvironmentErrorWithTheReason) {
  try {
    select_device("cuda", no_driver());
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& error) {
    EXPECT_EQ(error.exit_code(), ExitCode::environment);
    EXPECT_NE(std::string(error.what()).find("not installed"), std::string::npos);
    EXPECT_NE(error.remedy().find("--device cpu"), std::string::npos);
  }
}

TEST(SelectDevice, MalformedTextListsTheAllowedForms) {
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", ""}) {
    EXPECT_THROW(select_device(bad, two_gpus()), UsageError) << bad;
  }
  try {
    select_device("gpu", two_gpus());
  } catch (const UsageError& error) {
    EXPECT_NE(error.remedy().find("auto, cpu, cuda, cuda:N"), std::string::npos);
  }
}
