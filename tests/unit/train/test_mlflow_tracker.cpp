// The MLflow tracker's buffering, batching, retries and resume against a scripted stand-in for the
// server (the real one: tests/mlflow/check_mlflow.py). Also logging.mlflow's settings.
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
  std::vector<Metric> metrics;
  std::vector<std::size_t> batch_sizes;
  std::vector<Entry> params, logged_before;
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
                 const std::vector<Entry>&) override {
    call("log");
    std::lock_guard lock(r_.mutex);
    if (!metrics.empty() && r_.refuse_metrics) throw ApiError("INVALID_PARAMETER_VALUE", false);
    if (!metrics.empty()) r_.batch_sizes.push_back(metrics.size());
    r_.metrics.insert(r_.metrics.end(), metrics.begin(), metrics.end());
    r_.params.insert(r_.params.end(), params.begin(), params.end());
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

TEST(MlflowTracker, ADestroyedTrackerMarksItsRunFailed) {
  Received r;
  {
    Tracker tracker(std::make_unique<FakeApi>(r), fast_plan());
    tracker.log(metrics(3, 1));
  }
  EXPECT_EQ(r.status, "FAILED");
  EXPECT_EQ(r.metrics.size(), 3u);
}

TEST(MlflowSettings, TheEnvironmentNamesTheServerOnlyForAConfigThatAsksForMlflow) {
  ::setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999/", 1);
  const auto plain = load_config({{}, {"device=cpu"}, ""});
  EXPECT_TRUE(plain.logging.mlflow.tracking_uri.empty());
  const auto asked = load_config({{}, {"device=cpu", "logging.mlflow.experiment=x"}, ""});
  EXPECT_EQ(asked.logging.mlflow.tracking_uri, "http://127.0.0.1:5999");
  EXPECT_EQ(asked.logging.mlflow.experiment, "x");
  ::unsetenv("MLFLOW_TRACKING_URI");
  EXPECT_THROW(load_config({{}, {"device=cpu", "logging.mlflow.experiment=x"}, ""}), UsageError);
}

TEST(MlflowSettings, RefusesAnAddressThatIsNotAServersAndHidesAPassword) {
  try {
    load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=file:./mlruns"}, ""});
    FAIL() << "a file store was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("http://"), std::string::npos);
    EXPECT_NE(e.remedy().find("mlflow server"), std::string::npos);
  }
  const auto config = load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=http://me:secret@127.0.0.1:5000"}, ""});
  EXPECT_EQ(to_yaml(config).find("secret"), std::string::npos);
  EXPECT_EQ(config.logging.mlflow.experiment, "Default");
}

// An address libcurl cannot connect to is a config error at once, named where it came from; a
// well-formed one with no server behind it is not (the server may start later: a warning then).
TEST(MlflowSettings, RefusesAnAddressWithNoHostOrABadPortAndNamesTheEnvironmentWhenItGaveIt) {
  if (url_fault("http://") == "") GTEST_SKIP() << "a build without libcurl: its own error comes at the run's start";
  const auto error_for = [](const std::string& setting) {
    return test_support::usage_error([&] { load_config({{}, {"device=cpu", setting}, ""}); });
  };
  EXPECT_EQ(error_for("logging.mlflow.tracking_uri=http://127.0.0.1:99999"),
            "config: logging.mlflow.tracking_uri is 'http://127.0.0.1:99999', which is not an address to connect to: "
            "Port number was not a decimal number between 0 and 65535");
  EXPECT_NE(error_for("logging.mlflow.tracking_uri=http://[::1:5000").find("Bad IPv6 address"), std::string::npos);
  ::setenv("MLFLOW_TRACKING_URI", "http://", 1);
  EXPECT_EQ(error_for("logging.mlflow.experiment=x"),
            "MLFLOW_TRACKING_URI (logging.mlflow.tracking_uri is unset) is 'http://', which is not an address to connect to: "
            "No host part in the URL");
  EXPECT_EQ(test_support::usage_fix([] {
              load_config({{}, {"device=cpu", "logging.mlflow.experiment=x"}, ""});
            }),
            "export MLFLOW_TRACKING_URI=http://HOST:PORT, e.g. http://127.0.0.1:5000");
  ::unsetenv("MLFLOW_TRACKING_URI");
  EXPECT_EQ(url_fault("http://127.0.0.1:5000/mlflow"), "");
}

// The REST client's own errors show the address as the config and the log do: without its password.
TEST(MlflowRest, AServerThatDoesNotAnswerIsNamedWithItsPasswordMasked) {
  std::unique_ptr<Api> api;
  try {
    api = make_rest_api({"http://alice:s3cret@127.0.0.1:9", 5});  // the discard port: nothing listens
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  try {
    api->experiment_id("Default");
    FAIL() << "a server answered on port 9";
  } catch (const ApiError& e) {
    const std::string said = e.what();
    EXPECT_EQ(said.find("s3cret"), std::string::npos) << said;
    EXPECT_NE(said.find("no answer from http://alice:****@127.0.0.1:9"), std::string::npos) << said;
  }
}

// A token read from a file keeps its line break: trimmed, as a header needs it. One with a line
// break inside (which would end the header and start another) is refused before training, and the
// error says where, never what.
TEST(MlflowSettings, ATokensBlanksAreTrimmedAndALineBreakInsideIsRefused) {
  ::setenv("MLFLOW_TRACKING_TOKEN", " tok-123\r\n", 1);
  EXPECT_EQ(tracking_token(), "tok-123");
  ::setenv("MLFLOW_TRACKING_TOKEN", "\n", 1);
  EXPECT_EQ(tracking_token(), std::nullopt);
  ::setenv("MLFLOW_TRACKING_TOKEN", "tok\r\nX-Injected: 1", 1);
  try {
    load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=http://127.0.0.1:5000"}, ""});
    ADD_FAILURE() << "a token with a line break was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("MLFLOW_TRACKING_TOKEN holds a control character (byte 13 at position 4"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("Injected"), std::string::npos) << "the token's text is not shown";
  }
  EXPECT_NO_THROW(load_config({{}, {"device=cpu"}, ""})) << "a run without MLflow does not read it";
  ::unsetenv("MLFLOW_TRACKING_TOKEN");
}

// An https server's certificate is checked as MLflow's variables say; what MLflow refuses (both
// CERT_PATH and INSECURE_TLS, a value that is no boolean) and a path that is no file are refused
// before training, naming the variable.
TEST(MlflowSettings, TlsVariablesAreReadAsMlflowsClientsReadThem) {
  const auto refused = [](const std::string& expected) {
    try {
      load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=https://127.0.0.1:5000"}, ""});
      ADD_FAILURE() << "taken; expected: " << expected;
    } catch (const UsageError& e) {
      EXPECT_NE((std::string(e.what()) + "\n" + e.remedy()).find(expected), std::string::npos) << e.what() << "\n" << e.remedy();
    }
  };
  EXPECT_FALSE(tls_settings().insecure);
  ::setenv("MLFLOW_TRACKING_INSECURE_TLS", "True", 1);
  EXPECT_TRUE(tls_settings().insecure);
  ::setenv("MLFLOW_TRACKING_INSECURE_TLS", "yes please", 1);
  refused("MLFLOW_TRACKING_INSECURE_TLS is 'yes please', which is neither true nor false");
  ::setenv("MLFLOW_TRACKING_INSECURE_TLS", "true", 1);
  const test_support::ScratchFolder folder("tls-settings");
  const std::string cert = (folder.path / "ca.pem").string();
  std::ofstream(cert) << "-----BEGIN CERTIFICATE-----\n";
  ::setenv("MLFLOW_TRACKING_SERVER_CERT_PATH", cert.c_str(), 1);
  refused("unset one of them");
  ::unsetenv("MLFLOW_TRACKING_INSECURE_TLS");
  EXPECT_EQ(tls_settings().server_cert, cert);
  ::setenv("MLFLOW_TRACKING_CLIENT_CERT_PATH", (cert + ".gone").c_str(), 1);
  refused("MLFLOW_TRACKING_CLIENT_CERT_PATH is '" + cert + ".gone', which is not a file this user can read");
  ::unsetenv("MLFLOW_TRACKING_CLIENT_CERT_PATH");
  ::unsetenv("MLFLOW_TRACKING_SERVER_CERT_PATH");
}

}  // namespace
}  // namespace gputrain::train::mlflow
