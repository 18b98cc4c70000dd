#include <gtest/gtest.h>

#include <string>

#include "gputrain/core/build_info.hpp"
#include "gputrain/device/version_report.hpp"

using namespace gputrain;

// `gputrain --version`: one line for gputrain, LibTorch, each CUDA library and the driver, which
// says why there is none on a machine without one rather than failing.
TEST(VersionReport, NamesEveryPieceOnALineOfItsOwn) {
  const std::string report = device::version_report();
  EXPECT_EQ(report.rfind("gputrain       " + std::string(core::build_info().gputrain_version), 0), 0U) << report;
  for (const char* line : {"\nLibTorch       ", "\nCUDA runtime   ", "\ncudnn", "\nnccl", "\nNVIDIA driver  "})
    EXPECT_NE(report.find(line), std::string::npos) << line << " missing from:\n" << report;
  EXPECT_EQ(report.back(), '\n');
}
