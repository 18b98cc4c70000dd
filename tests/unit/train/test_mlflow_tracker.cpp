// The MLflow tracker's buffering, batching, retries and resume against a scripted stand-in for the
// server (the real one: tests/mlflow/check_mlflow.py); the settings: test_mlflow_settings.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "support/scratch_folder.hpp"
#include "support/usage_errors.hpp"
#include "train/config/mlflow_settings.hpp"
#include "train/monitor/mlflow_tracker.hpp"

namespace gputrain::train::mlflow {
namespace {

// What the stand-in server received; `away` requests go unanswered (ApiError with retry).
struct Received {
  std::mutex mutex;
  std::atomic<int> away{0};       // the next `away` requests find no server
  std::atomic<bool> gone{false};  // from now on no request finds it
  bool refuse_metrics = false;
  bool refuse_files = false;  // as a server without --serve-artifacts refuses every file
  bool run_deleted = false;   // the run is in the server's trash: nothing can be logged to it
  std::vector<Metric> metrics;
  std::vector<std::size_t> batch_sizes;
  std::vector<Entry> params, logged_before, tags;
  std::vector<std::string> files, calls;
  std::string status, experiment, run_name;
};

class FakeApi final : public Api {
 public:
  explicit FakeApi(Received& r) : r_(r) {}
  std::string experiment_id(const std::string& name) override {
    call("experiment");
    std::lock_guard lock(r_.mutex);
    r_.experiment = name;
    return "7";
  }
  std::string experiment_name(const std::string& id) override {
    call("experiment by id");
    if (id != "7") throw ApiError("MLFLOW_EXPERIMENT_ID is '" + id + "', but the server has no such experiment", false);
    std::lock_guard lock(r_.mutex);
    r_.experiment = "seven";
    return r_.experiment;
  }
  RunRef create_run(const std::string& experiment, const std::string& run_name, std::int64_t, const std::vector<Entry>&) override {
    call("create");
    {
      std::lock_guard lock(r_.mutex);
      r_.run_name = run_name;
    }
    return {"run-new", experiment, "mlflow-artifacts:/7/run-new/artifacts"};
  }
  RunRef reopen_run(const std::string& id, std::vector<Entry>& params) override {
    call("reopen");
    if (id != "run-old") throw ApiError("RESOURCE_DOES_NOT_EXIST", false);
    params = r_.logged_before;
    return {id, "7", ""};
  }
  void log_batch(const std::string&, const std::vector<Metric>& metrics, const std::vector<Entry>& params,
                 const std::vector<Entry>& tags) override {
    call("log");
    std::lock_guard lock(r_.mutex);
    if (!metrics.empty() && r_.refuse_metrics) throw ApiError("INVALID_PARAMETER_VALUE", false);
    if (r_.run_deleted) throw ApiError("run run-new is deleted on the server", false, true);
    if (!metrics.empty()) r_.batch_sizes.push_back(metrics.size());
    r_.metrics.insert(r_.metrics.end(), metrics.begin(), metrics.end());
    r_.params.insert(r_.params.end(), params.begin(), params.end());
    r_.tags.insert(r_.tags.end(), tags.begin(), tags.end());
  }
  void upload_artifact(const RunRef&, const std::string& file) override {
    call("upload");
    std::lock_guard lock(r_.mutex);
    if (r_.refuse_files) throw ApiError("the server keeps this run's files where gputrain cannot write", false);
    r_.files.push_back(file);
  }
  void end_run(const std::string&, const std::string& status, std::int64_t) override {
    call("end");
    std::lock_guard lock(r_.mutex);
    if (r_.run_deleted) throw ApiError("run run-new is deleted on the server", false, true);
    r_.status = status;
  }
  void cancel() override {}

 private:
  void call(const std::string& what) {
    {
      std::lock_guard lock(r_.mutex);
      r_.calls.push_back(what);
    }
    if (r_.gone || (r_.away > 0 && r_.away-- > 0)) throw ApiError("no answer", true);
  }
  Received& r_;
};

TrackerPlan fast_plan() {
  TrackerPlan plan;
  plan.tracking_uri = "http://127.0.0.1:1";
  plan.experiment = "e";
  plan.run_name = "r";
  plan.params = {{"optimizer.lr", "0.1"}, {"train.epochs", "3"}};
  plan.first_retry_seconds = 0.01;
  plan.send_every_seconds = 0.01;
  return plan;
}

std::vector<Metric> metrics(int count, std::int64_t first_step) {
  std::vector<Metric> out;
  for (int i = 0; i < count; ++i) out.push_back({"train/loss", double(i), 0, first_step + i});
  return out;
}

int warnings(const std::vector<TrackerMessage>& messages) {
  int n = 0;
  for (const auto& m : messages) n += m.level == Level::warning;
  return n;
}

TEST(MlflowTracker, SendsParamsMetricsInBatchesFilesAndTheStatus) {
  Received r;
  Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
  tracker.log(metrics(2500, 1));
  tracker.finish("FINISHED", {"config.yaml", "model.safetensors"}, 30);
  ASSERT_EQ(r.metrics.size(), 2500u);
  for (std::size_t i = 0; i < r.metrics.size(); ++i) ASSERT_EQ(r.metrics[i].step, std::int64_t(i) + 1);  // in order
  for (auto size : r.batch_sizes) EXPECT_LE(size, kMaxMetricsPerBatch);
  EXPECT_EQ(r.params, fast_plan().params);
  EXPECT_EQ(r.files, (std::vector<std::string>{"config.yaml", "model.safetensors"}));
  EXPECT_EQ(r.status, "FINISHED");
  EXPECT_EQ(tracker.run_id(), "run-new");
  EXPECT_EQ(warnings(tracker.take_messages()), 0);
}

// The server takes JSON, UTF-8: names and values typed on a Latin-1 system are read as
// Windows-1252, and a value cut to MLflow's limit is cut between two characters.
TEST(MlflowTracker, SendsUtf8AndCutsALongValueBetweenCharacters) {
  Received r;
  auto plan = fast_plan();
  plan.experiment = "caf\xE9";
  plan.run_name = "run-caf\xE9";
  std::string long_value = "xy";  // then two-byte characters, the limit's byte a character's second
  while (long_value.size() <= kMaxParamValue) long_value += "\xC3\xA9";
  plan.params = {{"data.path", "/data/caf\xE9/x.npy"}, {"data.class_names", long_value}};
  Tracker tracker(std::make_unique<FakeApi>(r), plan);
  tracker.finish("FINISHED", {}, 30);
  EXPECT_EQ(r.experiment, "caf\xC3\xA9");
  EXPECT_EQ(r.run_name, "run-caf\xC3\xA9");
  ASSERT_EQ(r.params.size(), 2U);
  EXPECT_EQ(r.params[0].second, "/data/caf\xC3\xA9/x.npy");
  const auto& cut = r.params[1].second;
  EXPECT_LE(cut.size(), kMaxParamValue);
  EXPECT_EQ(cut.substr(cut.size() - 5), "\xC3\xA9...");
}

TEST(MlflowTracker, KeepsMetricsWhileTheServerIsAwayAndWarnsOnce) {
  Received r;
  r.away = 6;  // the run's creation and the first sends find no server
  Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
  tracker.log(metrics(10, 1));
  tracker.log(metrics(10, 11));
  tracker.finish("FINISHED", {}, 30);
  EXPECT_EQ(r.metrics.size(), 20u);
  EXPECT_EQ(r.status, "FINISHED");
  EXPECT_EQ(warnings(tracker.take_messages()), 1);
}

TEST(MlflowTracker, GivesUpAtTheDeadlineWhenTheServerNeverAnswers) {
  Received r;
  r.away = 1'000'000;
  Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
  tracker.log(metrics(5, 1));
  tracker.finish("FINISHED", {"model.safetensors"}, 0.2);
  EXPECT_TRUE(r.metrics.empty());
  EXPECT_TRUE(r.status.empty());
  const auto said = tracker.take_messages();
  EXPECT_EQ(warnings(said), 1);  // the server being away; the end's loss goes to training.log
  bool end_recorded = false;
  for (const auto& m : said) end_recorded |= m.level == Level::record && m.text.find("5 metrics") != std::string::npos;
  EXPECT_TRUE(end_recorded);
}

TEST(MlflowTracker, AServerThatDiesMidRunCostsOneWarningAndTheRunKeepsItsId) {
  Received r;
  Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
  tracker.wait_for_run();
  tracker.log(metrics(3, 1));
  for (int i = 0; i < 500 &&
                  [&] {
                    std::lock_guard lock(r.mutex);
                    return r.metrics.size() < 3;
                  }();
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(r.metrics.size(), 3u) << "the first metrics never reached the server";
  r.gone = true;
  tracker.log(metrics(4, 4));
  tracker.finish("FINISHED", {"model.safetensors"}, 0.2);
  EXPECT_EQ(r.metrics.size(), 3u);
  EXPECT_TRUE(r.status.empty());
  EXPECT_EQ(tracker.run_id(), "run-new");  // the checkpoint still names the run
  EXPECT_EQ(warnings(tracker.take_messages()), 1);
}

// The server went away mid-run and is back by the end, while the tracker waits out a long retry
// backoff: the end tries at once, so the last metrics and the status still arrive.
TEST(MlflowTracker, AServerBackBeforeTheEndGetsEverythingThoughARetryIsFarOff) {
  Received r;
  auto plan = fast_plan();
  plan.first_retry_seconds = 60;  // the next retry after a failure: past the end's deadline
  r.away = 1;                     // opening the run fails once: the tracker then waits out its backoff
  Tracker tracker(std::make_unique<FakeApi>(r), plan);
  tracker.wait_for_run();
  tracker.log(metrics(3, 1));
  tracker.log(metrics(4, 4));
  tracker.finish("FINISHED", {}, 5);
  EXPECT_EQ(r.metrics.size(), 7u);
  EXPECT_EQ(r.status, "FINISHED");
}

// After a failure the tracker backs off (up to 30 s) while the run goes on; once it ends, a failed
// try is repeated every first_retry_seconds, within the end's wait, not after it.
TEST(MlflowTracker, AtTheEndAFailedTryIsRepeatedSoonNotAfterTheBackoff) {
  TrackerPlan plan;
  plan.first_retry_seconds = 1;
  plan.send_every_seconds = 2;
  EXPECT_EQ(wait_before_next_try(plan, /*failed=*/false, /*finishing=*/false, 16), 2);
  EXPECT_EQ(wait_before_next_try(plan, /*failed=*/true, /*finishing=*/false, 16), 16);
  EXPECT_EQ(wait_before_next_try(plan, /*failed=*/true, /*finishing=*/true, 16), 1);
  EXPECT_EQ(wait_before_next_try(plan, /*failed=*/false, /*finishing=*/true, 16), 2);
}

TEST(MlflowTracker, AResumeGoesOnInItsRunAndSendsOnlyNewParams) {
  Received r;
  r.logged_before = {{"optimizer.lr", "0.1"}, {"train.epochs", "2"}};
  auto plan = fast_plan();
  plan.resume_run_id = "run-old";
  plan.params.emplace_back("logging.mlflow.timeout", "10s");
  Tracker tracker(std::make_unique<FakeApi>(r), plan);
  tracker.finish("FINISHED", {}, 30);
  EXPECT_EQ(tracker.run_id(), "run-old");
  EXPECT_EQ(r.params, (std::vector<Entry>{{"logging.mlflow.timeout", "10s"}}));
  bool changed_said = false;
  for (const auto& m : tracker.take_messages()) changed_said |= m.text.find("train.epochs (2 -> 3)") != std::string::npos;
  EXPECT_TRUE(changed_said);
}

TEST(MlflowTracker, ARunTheServerNoLongerHasBecomesANewOne) {
  Received r;
  auto plan = fast_plan();
  plan.resume_run_id = "run-gone";
  Tracker tracker(std::make_unique<FakeApi>(r), plan);
  tracker.finish("KILLED", {}, 30);
  EXPECT_EQ(tracker.run_id(), "run-new");
  EXPECT_EQ(r.status, "KILLED");
  EXPECT_EQ(r.params.size(), 2u);
}

TEST(MlflowTracker, RefusedMetricsAreDroppedWithOneWarningAndTheRunGoesOn) {
  Received r;
  r.refuse_metrics = true;
  Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
  tracker.log(metrics(3, 1));
  tracker.finish("FINISHED", {}, 30);
  EXPECT_EQ(r.status, "FINISHED");
  EXPECT_EQ(warnings(tracker.take_messages()), 1);
}

// A server that takes no files refuses each for one reason: one warning names them all.
TEST(MlflowTracker, FilesRefusedForOneReasonAreOneWarning) {
  Received r;
  r.refuse_files = true;
  Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
  tracker.finish("FINISHED", {"config.yaml", "report.json", "model.safetensors"}, 30);
  EXPECT_EQ(r.status, "FINISHED");
  std::vector<std::string> lines;
  for (const auto& m : tracker.take_messages())
    if (m.level == Level::warning) lines.push_back(m.text);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("mlflow: config.yaml, report.json, model.safetensors were not uploaded: the server keeps this run's files", 0),
            0u)
      << lines[0];
}

// A run deleted on the server (its trash) while training: one warning, and no request after it
// (each would be refused: more warnings, or files uploaded into the trash).
TEST(MlflowTracker, ARunDeletedOnTheServerIsSaidOnceAndSentNothingMore) {
  Received r;
  r.run_deleted = true;  // from its first batch on: deterministic, as a deletion mid-run is not
  Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
  tracker.log(metrics(3, 1));
  tracker.log(metrics(1500, 4));
  tracker.finish("FINISHED", {"config.yaml", "report.json"}, 30);
  std::vector<std::string> lines;
  for (const auto& m : tracker.take_messages())
    if (m.level == Level::warning) lines.push_back(m.text);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("is deleted on the server: nothing more is sent to it"), std::string::npos) << lines[0];
  EXPECT_EQ(std::count(r.calls.begin(), r.calls.end(), "log"), 1);
  EXPECT_EQ(std::count(r.calls.begin(), r.calls.end(), "upload"), 0);
  EXPECT_EQ(std::count(r.calls.begin(), r.calls.end(), "end"), 0);
  EXPECT_TRUE(r.status.empty());
}

std::string said(Tracker& tracker, Level level) {
  std::string text;
  for (const auto& m : tracker.take_messages())
    if (m.level == level) text += m.text + "\n";
  return text;
}

// MLFLOW_EXPERIMENT_ID alone names the experiment: the run goes there, said by its name.
TEST(MlflowTracker, AnExperimentNamedByIdAloneGetsTheRun) {
  Received r;
  auto plan = fast_plan();
  plan.experiment = "";
  plan.experiment_id = "7";
  Tracker tracker(std::make_unique<FakeApi>(r), plan);
  tracker.finish("FINISHED", {}, 30);
  EXPECT_EQ(r.experiment, "seven");
  EXPECT_EQ(tracker.run_id(), "run-new");
  EXPECT_NE(said(tracker, Level::note).find("in experiment 'seven'"), std::string::npos);
}

// Named both ways, the two must agree (MLflow's clients refuse them otherwise): no run is made.
TEST(MlflowTracker, AnExperimentIdThatIsNotTheNamedOnesIsRefused) {
  Received r;
  auto plan = fast_plan();
  plan.experiment_id = "3";  // "e" is 7 on this server
  Tracker tracker(std::make_unique<FakeApi>(r), plan);
  tracker.finish("FINISHED", {}, 30);
  EXPECT_TRUE(tracker.run_id().empty());
  EXPECT_EQ(std::count(r.calls.begin(), r.calls.end(), "create"), 0);
  EXPECT_NE(
      said(tracker, Level::warning).find("MLFLOW_EXPERIMENT_ID is '3', but experiment 'e', which MLFLOW_EXPERIMENT_NAME names, has id 7"),
      std::string::npos);
}

// MLFLOW_RUN_ID: a run made elsewhere takes this one's figures; a checkpoint's run wins over it.
TEST(MlflowTracker, ARunGivenByMlflowRunIdIsLoggedToUnlessTheCheckpointHasOne) {
  Received r;
  auto plan = fast_plan();
  plan.given_run_id = "run-old";
  plan.tags = {{"gputrain.version", "1.2"}, {"mlflow.source.name", "gputrain train"}};
  Tracker given(std::make_unique<FakeApi>(r), plan);
  given.finish("FINISHED", {}, 30);
  EXPECT_EQ(given.run_id(), "run-old");
  EXPECT_NE(said(given, Level::note).find("logging to run run-old, which MLFLOW_RUN_ID names"), std::string::npos);
  EXPECT_EQ(r.tags, (std::vector<Entry>{{"gputrain.version", "1.2"}})) << "gputrain's tags, not the maker's source";

  plan.resume_run_id = "run-old";
  plan.given_run_id = "run-gone";
  Tracker resumed(std::make_unique<FakeApi>(r), plan);
  resumed.finish("FINISHED", {}, 30);
  EXPECT_EQ(resumed.run_id(), "run-old");
}

TEST(MlflowTracker, ARunIdTheServerDoesNotHaveIsAWarningAndANewRun) {
  Received r;
  auto plan = fast_plan();
  plan.given_run_id = "run-gone";
  Tracker tracker(std::make_unique<FakeApi>(r), plan);
  tracker.finish("FINISHED", {}, 30);
  EXPECT_EQ(tracker.run_id(), "run-new");
  EXPECT_NE(said(tracker, Level::warning).find("MLFLOW_RUN_ID names run run-gone, which cannot take this run's figures"),
            std::string::npos);
}

TEST(MlflowTracker, ADestroyedTrackerMarksItsRunFailed) {
  Received r;
  {
    Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
    tracker.log(metrics(3, 1));
  }
  EXPECT_EQ(r.status, "FAILED");
  EXPECT_EQ(r.metrics.size(), 3u);
}

}  // namespace
}  // namespace gputrain::train::mlflow
