// Each test starts from the same random numbers: LibTorch seeds its default CPU generator from
// the system's entropy, so a test drawing at::randn unseeded drew other samples every run (one
// failed one run in five). Seeded as each test starts, a test draws the same alone
// (--gtest_filter) as in its suite. The CPU generator only: seeding CUDA's would start a GPU
// test's CUDA context before the test sets it up.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <mutex>

namespace {

class SeedTorchAtEachTest : public testing::EmptyTestEventListener {
  void OnTestStart(const testing::TestInfo&) override {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_current_seed(20261203);
  }
};

const bool seed_torch_at_each_test = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new SeedTorchAtEachTest);
  return true;
}();

}  // namespace
