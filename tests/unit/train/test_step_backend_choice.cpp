// How a run says which step backend it took (train.cuda_graphs), and the step line's figures that
// leave one-time set-up steps out. The CUDA side is in tests/gpu/test_gpu_graphs.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gputrain/core/error.hpp"
#include "gputrain/data/batch.hpp"
#include "gputrain/train/callback.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"

using namespace gputrain;
using namespace gputrain::train;
using test_support::small_run;

TEST(StepBackendChoice, TheStartRecordSaysGraphsAreOffOnACpuAndWhy) {
  Trainer trainer(small_run("graphs-cpu", {"train.epochs=1"}), test_support::quiet_trainer());
  const auto result = trainer.fit();
  const auto starts = test_support::jsonl_records(result.run_dir + "/metrics.jsonl", "start");
  ASSERT_EQ(starts.size(), 1U);
  EXPECT_EQ(starts[0]["cuda_graphs"], "off (the device is not a CUDA GPU)");
}

TEST(StepBackendChoice, OnWhereCaptureIsImpossibleIsAUsageError) {
  try {
    Trainer trainer(small_run("graphs-on-cpu", {"train.cuda_graphs=on"}), test_support::quiet_trainer());
    FAIL() << "a CPU run with train.cuda_graphs: on started";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("train.cuda_graphs is on, but this run's steps cannot be captured: the device is not a CUDA GPU"),
              std::string::npos)
        << e.what();
  }
}

namespace {

// Keeps each step line's samples/s.
class Rates final : public Callback {
 public:
  std::string name() const override { return "rates"; }
  void on_log(RunControl&, const StepMetrics& m, const LossWindow&) override { rates.emplace_back(m.step, m.samples_per_second); }
  std::vector<std::pair<std::int64_t, double>> rates;
};

}  // namespace

// The first step at a batch size is set-up (cuDNN's benchmark times its algorithms there on a GPU):
// the window it falls in must not read as slow, nor its ETA jump. Made slow here on purpose: the
// epoch's partial batch (8 of 40 samples) sleeps 2 s the first time it comes.
TEST(StepBackendChoice, TheFirstStepAtANewBatchSizeIsLeftOutOfSamplesPerSecond) {
  auto options = test_support::quiet_trainer();
  auto rates = std::make_shared<Rates>();
  options.callbacks.push_back(rates);
  bool slept = false;
  options.on_batch = [&](const data::Batch& batch) {
    if (batch.size() == 8 && !slept) {
      slept = true;
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
  };
  Trainer trainer(small_run("setup-steps", {"data.samples=40", "train.epochs=1", "logging.every_steps=3", "data.shuffle=false"}), options);
  trainer.fit();
  ASSERT_TRUE(slept);
  ASSERT_EQ(rates->rates.size(), 2U);  // step 1 alone, then steps 2 and 3
  EXPECT_EQ(rates->rates[1].first, 3);
  // With the sleep counted the window would read at most 24 samples / 2 s = 12 samples/s.
  EXPECT_GT(rates->rates[1].second, 16.0) << "the set-up step's time was counted";
}
