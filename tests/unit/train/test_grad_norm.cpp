// logging.grad_norm (#51): the logged steps' gradient norm in metrics.jsonl, measured without
// changing what trains.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

std::vector<nlohmann::json> step_records(const std::vector<std::string>& overrides, const std::string& name) {
  const auto config = test_support::small_run(name, overrides);
  Trainer(config, test_support::quiet_trainer()).fit();
  return test_support::jsonl_records(std::filesystem::path(config.logging.dir) / "metrics.jsonl", "step");
}

}  // namespace

TEST(GradNorm, EachStepLineHasTheNormAndMeasuringChangesNoLoss) {
  const auto measured = step_records({}, "grad-norm-on");
  const auto plain = step_records({"logging.grad_norm=false"}, "grad-norm-off");
  ASSERT_EQ(measured.size(), plain.size());
  ASSERT_GE(measured.size(), 3U);
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ASSERT_TRUE(measured[i]["grad_norm"].is_number()) << measured[i];
    const double norm = measured[i]["grad_norm"];
    EXPECT_TRUE(std::isfinite(norm) && norm > 0) << measured[i];
    EXPECT_TRUE(plain[i]["grad_norm"].is_null()) << plain[i];
    EXPECT_EQ(measured[i]["loss"], plain[i]["loss"]) << "step " << measured[i]["step"];
  }
}

// With clipping on, the figure is the norm before clipping: above the limit it clips to.
TEST(GradNorm, WithClippingItIsTheNormBeforeClipping) {
  const auto records = step_records({"train.clip_grad_norm=0.001"}, "grad-norm-clipped");
  ASSERT_FALSE(records.empty());
  for (const auto& r : records) EXPECT_GT(r["grad_norm"].get<double>(), 0.001) << r;
}
