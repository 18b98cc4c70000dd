// Every functional and performance check on real GPUs (ctest label `gpu`; skipped without one).
#include <gtest/gtest.h>

#include "gputrain/checks/runner.hpp"
#include "gputrain/checks/verify.hpp"

using namespace gputrain::checks;

namespace {

std::shared_ptr<Context> gpu_context() {
  static const auto context = gather_context(Level::quick, false);
  return context;
}

std::vector<Outcome> run_area(const std::string& area) {
  const auto context = gpu_context();
  std::vector<Check> selected;
  for (auto& check : verify_checks(*context)) {
    if (check.area == area) selected.push_back(std::move(check));
  }
  return run_checks(selected, context);
}

#define SKIP_WITHOUT_GPU()                   \
  if (gpu_context()->inventory.gpus.empty()) \
  GTEST_SKIP() << "no CUDA GPU here (" << gpu_context()->inventory.driver.cuda_error << "); runs on the GPU machine"

}  // namespace

TEST(GpuChecks, FunctionalChecksAllPass) {
  SKIP_WITHOUT_GPU();
  const auto outcomes = run_area("functional");
  ASSERT_FALSE(outcomes.empty());
  for (const auto& o : outcomes) {
    EXPECT_TRUE(o.result.status == Status::pass || o.result.status == Status::skip)
        << o.id << ": " << o.result.detail << " / " << o.result.remedy;
  }
}

TEST(GpuChecks, PerformanceChecksMeasurePositiveFiguresWithoutFailing) {
  SKIP_WITHOUT_GPU();
  const auto outcomes = run_area("performance");
  ASSERT_FALSE(outcomes.empty());
  for (const auto& o : outcomes) {
    EXPECT_NE(o.result.status, Status::fail) << o.id << ": " << o.result.detail;
    EXPECT_NE(o.result.status, Status::timeout) << o.id;
    if (o.result.status == Status::skip) continue;
    ASSERT_FALSE(o.result.figures.empty()) << o.id;
    EXPECT_GT(o.result.figures.front().value, 0.0) << o.id;
    std::cout << o.id << ": " << o.result.detail << "\n";
  }
}

TEST(GpuChecks, GpuFactsAreComplete) {
  SKIP_WITHOUT_GPU();
  for (const auto& gpu : gpu_context()->inventory.gpus) {
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_EQ(gpu.uuid.rfind("GPU-", 0), 0u) << gpu.uuid;
    EXPECT_GE(gpu.cc_major, 7);
    EXPECT_GT(gpu.sm_count, 0);
    EXPECT_GT(gpu.memory_total, 0u);
    EXPECT_TRUE(gpu.memory_free.has_value());
  }
  EXPECT_FALSE(gpu_context()->inventory.driver.driver_version.empty());
  EXPECT_GE(gpu_context()->inventory.driver.cuda_driver_api_version, 13000);
}
