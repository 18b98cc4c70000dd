// logging.alerts over synthetic metric streams: each alert fires when its condition starts (or has
// lasted its minutes), once, again only after it cleared, with what to do; `off` silences it. And
// a run's system metrics and alerts in metrics.jsonl, training.log and its summary; report.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "gputrain/core/stop_signal.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/train/callback.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/test_paths.hpp"
#include "train/monitor/alert_rules.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

device::SystemSample gpu_sample(double seconds, double used_percent, double busy, double celsius) {
  device::SystemSample s;
  s.seconds = seconds;
  s.gpu_memory_total_bytes = 80e9;
  s.gpu_memory_used_bytes = 80e9 * used_percent / 100;
  s.gpu_utilization_percent = busy;
  s.gpu_temperature_c = celsius;
  return s;
}

std::vector<std::string> names(const std::vector<Alert>& alerts) {
  std::vector<std::string> out;
  for (const auto& a : alerts) out.push_back(a.name);
  return out;
}

}  // namespace

TEST(AlertRules, GpuMemoryFiresAfterItsMinutesOnceAndAgainAfterItCleared) {
  AlertRules rules(AlertsConfig{});  // over 95 % for 5 minutes
  std::vector<std::string> fired;
  for (double t = 0; t <= 290; t += 10) EXPECT_TRUE(rules.system(gpu_sample(t, 97, 90, 60)).empty()) << t;
  const auto at_five = rules.system(gpu_sample(300, 97, 90, 60));
  ASSERT_EQ(names(at_five), std::vector<std::string>{"gpu_memory_percent"});
  EXPECT_NE(at_five[0].message.find("GPU memory 97 % used for 5 min (over 95 %)"), std::string::npos) << at_five[0].message;
  EXPECT_NE(at_five[0].message.find("train.batch_size"), std::string::npos);
  EXPECT_TRUE(rules.system(gpu_sample(600, 97, 90, 60)).empty()) << "once per stretch";
  EXPECT_TRUE(rules.system(gpu_sample(610, 50, 90, 60)).empty());
  EXPECT_TRUE(rules.system(gpu_sample(620, 97, 90, 60)).empty()) << "the minutes start again";
  EXPECT_EQ(names(rules.system(gpu_sample(920, 97, 90, 60))), std::vector<std::string>{"gpu_memory_percent"});
  EXPECT_EQ(rules.fired(), 2);
}

TEST(AlertRules, AnIdleGpuAndAHotOneFireAndOffSilencesThem) {
  AlertRules rules(AlertsConfig{});
  EXPECT_TRUE(rules.system(gpu_sample(0, 10, 30, 80)).empty());
  EXPECT_EQ(names(rules.system(gpu_sample(300, 10, 30, 86))), (std::vector<std::string>{"gpu_utilization_percent", "temperature_c"}));
  EXPECT_TRUE(rules.system(gpu_sample(310, 10, 30, 87)).empty());
  AlertsConfig off;
  off.gpu_utilization_percent.reset();
  off.temperature_c.reset();
  AlertRules silent(off);
  silent.system(gpu_sample(0, 10, 30, 90));
  EXPECT_TRUE(silent.system(gpu_sample(400, 10, 30, 90)).empty());
}

TEST(AlertRules, SlowDataAndALargeGradientNormFireFromTheStepLines) {
  AlertRules rules(AlertsConfig{});
  StepMetrics m;
  m.step = 100;
  m.data_seconds = 0.02;
  m.grad_norm = 3.0;
  EXPECT_TRUE(rules.step(m).empty());
  m.step = 110;
  m.data_seconds = 0.08;
  m.grad_norm = 25.0;
  const auto alerts = rules.step(m);
  ASSERT_EQ(names(alerts), (std::vector<std::string>{"data_wait_ms", "grad_norm"}));
  EXPECT_NE(alerts[0].message.find("waiting 80 ms a step for data by step 110 (over 50 ms)"), std::string::npos) << alerts[0].message;
  EXPECT_NE(alerts[1].message.find("gradient norm 25.00 at step 110 (over 10.00)"), std::string::npos) << alerts[1].message;
  EXPECT_NE(alerts[1].message.find("train.clip_grad_norm"), std::string::npos);
  m.step = 120;
  EXPECT_TRUE(rules.step(m).empty());
  m.grad_norm.reset();  // an unmeasured step says nothing about the norm
  EXPECT_TRUE(rules.step(m).empty());
}

TEST(AlertRules, NoImprovementCountsEpochsSinceTheBestValidationLoss) {
  AlertsConfig config;
  config.no_improvement_epochs = 3;
  AlertRules rules(config);
  EpochMetrics e;
  for (double loss : {1.0, 0.8, 0.9, 0.85}) {
    e.val_loss = loss;
    EXPECT_TRUE(rules.epoch(e).empty()) << loss;
  }
  e.val_loss = 0.95;
  const auto alerts = rules.epoch(e);
  ASSERT_EQ(names(alerts), std::vector<std::string>{"no_improvement_epochs"});
  EXPECT_NE(alerts[0].message.find("not improved for 3 epochs (best 0.8000)"), std::string::npos) << alerts[0].message;
  e.val_loss = 0.7;
  EXPECT_TRUE(rules.epoch(e).empty());
  EXPECT_EQ(rules.improvement_state(), (std::pair<double, std::int64_t>{0.7, 0}));
}

TEST(AlertRules, HostMemoryGrowthIsARateOverTenMinutesAfterTheFirstFive) {
  AlertRules rules(AlertsConfig{});  // 2 GB an hour
  device::SystemSample s;
  for (double t = 0; t <= 1200; t += 60) {
    s.seconds = t;
    s.host_rss_bytes = 1e9 + (t < 300 ? t * 1e7 : 3e9 + (t - 300) * 1e9 / 3600);  // a fast start, then 1 GB/h
    EXPECT_TRUE(rules.system(s).empty()) << t;
  }
  std::vector<Alert> alerts;
  for (double t = 1260; t <= 2400 && alerts.empty(); t += 60) {
    s.seconds = t;
    s.host_rss_bytes = 1e9 + 3e9 + 900 * 1e9 / 3600 + (t - 1200) * 4e9 / 3600;  // now 4 GB/h
    alerts = rules.system(s);
  }
  ASSERT_EQ(names(alerts), std::vector<std::string>{"memory_growth_gb_per_hour"});
  EXPECT_NE(alerts[0].message.find("host memory growing"), std::string::npos) << alerts[0].message;
  EXPECT_GT(alerts[0].value, 2.0);
}

// A CPU run: system records with the host's memory (no GPU figures), and a grad_norm alert set
// low enough to fire: one warning line, one alert record, the count in the summary's result.
TEST(Alerts, ARunWritesSystemRecordsAndSaysItsAlerts) {
  const auto config = test_support::small_run("alerts", {"logging.system_every=1s", "logging.alerts.grad_norm=0.000001"});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.alerts, 1);
  const auto systems = test_support::jsonl_records(result.run_dir + "/metrics.jsonl", "system");
  ASSERT_GE(systems.size(), 1U);
  EXPECT_GT(systems[0]["host_rss_bytes"].get<double>(), 1e6);
  EXPECT_FALSE(systems[0].contains("gpu_utilization_percent"));
  const auto alerts = test_support::jsonl_records(result.run_dir + "/metrics.jsonl", "alert");
  ASSERT_EQ(alerts.size(), 1U);
  EXPECT_EQ(alerts[0]["alert"], "grad_norm");
  EXPECT_EQ(alerts[0]["step"], 1);
  std::ifstream log(std::filesystem::path(result.run_dir) / "training.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("warning: alert grad_norm: gradient norm"), std::string::npos) << text;
}

TEST(Alerts, EveryAlertAndTheSystemPeriodCanBeTurnedOff) {
  const auto config = test_support::small_run(
      "alerts-off", {"logging.system_every=off", "logging.alerts.grad_norm=off", "logging.alerts.data_wait_ms=off"});
  EXPECT_EQ(config.logging.system_every, 0);
  EXPECT_FALSE(config.logging.alerts.grad_norm.has_value());
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.alerts, 0);
  EXPECT_TRUE(test_support::jsonl_records(result.run_dir + "/metrics.jsonl", "system").empty());
  EXPECT_THROW(test_support::small_run("alerts-bad", {"logging.alerts.grad_norm=high"}), UsageError);
  EXPECT_THROW(test_support::small_run("alerts-bad", {"logging.system_every=10"}), UsageError);
}

namespace {

// docs/monitoring.md's report.json table: each row's first-cell names, with the backticked words
// of its meaning (a nested object's keys are named there).
std::map<std::string, std::set<std::string>> documented_report_fields() {
  std::ifstream doc(std::string(gputrain::test_support::source_dir()) + "/docs/monitoring.md");
  std::map<std::string, std::set<std::string>> fields;
  bool inside = false;
  const std::regex word("`([a-z0-9_]+)`");
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) inside = line.find("report.json") != std::string::npos;
    if (!inside || line.rfind("| `", 0) != 0) continue;
    const auto split = line.find(" | ", 2);
    const std::string names = line.substr(0, split), meaning = line.substr(split);
    std::set<std::string> words;
    for (std::sregex_iterator it(meaning.begin(), meaning.end(), word), end; it != end; ++it) words.insert((*it)[1]);
    for (std::sregex_iterator it(names.begin(), names.end(), word), end; it != end; ++it) fields[(*it)[1]] = words;
  }
  return fields;
}

// Every field of `report` is in the docs (a nested one in its row's meaning), and every
// documented field is in `report`.
void expect_documented(const nlohmann::json& report) {
  const auto fields = documented_report_fields();
  ASSERT_FALSE(fields.empty()) << "no report.json table in docs/monitoring.md";
  for (const auto& [key, value] : report.items()) {
    const auto row = fields.find(key);
    if (row == fields.end()) {
      ADD_FAILURE() << key << " is in report.json but not in docs/monitoring.md";
      continue;
    }
    // An object's keys, or those of each object in an array (ranks), are named in the row.
    for (const auto& object : value.is_array() ? value : nlohmann::json::array({value})) {
      if (!object.is_object()) continue;
      for (const auto& [inner, ignored] : object.items()) {
        EXPECT_TRUE(row->second.count(inner)) << key << "." << inner << " is not named in its row of docs/monitoring.md";
      }
    }
  }
  for (const auto& [key, words] : fields) EXPECT_TRUE(report.contains(key)) << key << " is documented but not in report.json";
}

}  // namespace

// report.json: the run's figures in one file, for a finished run and for an interrupted one; the
// docs name every field.
TEST(RunReport, AFinishedAndAnInterruptedRunEachLeaveOne) {
  const auto config = test_support::small_run("report", {"logging.system_every=1s", "logging.alerts.grad_norm=0.000001"});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  std::ifstream in(std::filesystem::path(result.run_dir) / "report.json");
  ASSERT_TRUE(in) << "no report.json in " << result.run_dir;
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["schema"], "gputrain.report/1");
  EXPECT_EQ(report["outcome"], "finished");
  EXPECT_EQ(report["steps"], 12);
  EXPECT_EQ(report["samples"], result.samples);
  EXPECT_DOUBLE_EQ(report["samples_per_second"].get<double>(), result.samples_per_second);
  const auto& steps = report["step_seconds"];
  EXPECT_GE(steps["steps_timed"].get<int>(), 8);  // 12 steps less the first and those after validation and checkpoints
  EXPECT_LE(steps["p50"].get<double>(), steps["p95"].get<double>());
  EXPECT_GT(steps["p50"].get<double>(), 0);
  EXPECT_TRUE(report["gpu_utilization_percent"]["mean"].is_null()) << "a CPU run";
  EXPECT_EQ(report["gpu_hours"], 0.0);
  EXPECT_GT(report["memory_peak_bytes"]["host_rss"].get<double>(), 1e6);
  EXPECT_EQ(report["alerts"]["total"], 1);
  EXPECT_EQ(report["alerts"]["by_name"]["grad_norm"], 1);
  ASSERT_EQ(report["ranks"].size(), 1U);  // a plain run is one rank, with no scaling to speak of
  EXPECT_EQ(report["ranks"][0]["samples"], result.samples);
  EXPECT_DOUBLE_EQ(report["ranks"][0]["step_p50_seconds"].get<double>(), steps["p50"].get<double>());
  EXPECT_TRUE(report["scaling_efficiency"].is_null());
  expect_documented(report);

  core::clear_stop_request();
  auto options = test_support::quiet_trainer();
  options.after_step = [](std::int64_t step) {
    if (step == 3) core::request_stop();
  };
  Trainer stopped(test_support::small_run("report-stopped"), options);
  const auto partial = stopped.fit();
  core::clear_stop_request();
  std::ifstream again(std::filesystem::path(partial.run_dir) / "report.json");
  ASSERT_TRUE(again);
  const auto interrupted = nlohmann::json::parse(again);
  EXPECT_EQ(interrupted["outcome"], "interrupted");
  EXPECT_EQ(interrupted["steps"], 3);
  EXPECT_TRUE(interrupted["error"].is_null());
}

// A run an error ended leaves its report too, with the error, and says it before any validation.
TEST(RunReport, AFailedRunLeavesOneWithItsError) {
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  auto config = test_support::small_run("report-failed", {"optimizer.lr=1e30", "logging.every_steps=100"});
  config.logging.progress = "lines";
  Trainer trainer(config, options);
  try {
    trainer.fit();
    FAIL() << "a learning rate of 1e30 trained";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("training diverged"), std::string::npos) << e.what();
  }
  std::ifstream in(std::filesystem::path(config.logging.dir) / "report.json");
  ASSERT_TRUE(in) << "a failed run left no report.json";
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["outcome"], "failed");
  EXPECT_NE(report["error"].get<std::string>().find("training diverged: the loss is nan"), std::string::npos) << report["error"];
  EXPECT_GT(report["steps"].get<std::int64_t>(), 0);
  EXPECT_GT(report["samples"].get<std::int64_t>(), 0);
  ASSERT_EQ(report["ranks"].size(), 1U);
  expect_documented(report);
  // The divergence is caught at the epoch's end, before that epoch is validated and said.
  EXPECT_EQ(console.str().find("loss nan"), std::string::npos) << console.str();
  EXPECT_EQ(console.str().find("loss -nan"), std::string::npos) << console.str();
}

namespace {

// An error naming a path typed on a Latin-1 system, as a data reader's does.
class LatinOneFailure final : public Callback {
 public:
  std::string name() const override { return "latin_one_failure"; }
  void on_step_end(RunControl&, std::int64_t step) override {
    if (step == 2) throw Error("cannot read '/data/caf\xE9/x.npy'", "check the file");
  }
};

}  // namespace

// Its error's bytes that are not UTF-8 reach report.json as U+FFFD; they used to cost the report.
TEST(RunReport, AnErrorThatIsNotUtf8IsKept) {
  auto options = test_support::quiet_trainer();
  options.callbacks.push_back(std::make_shared<LatinOneFailure>());
  const auto config = test_support::small_run("report-latin-one", {});
  Trainer trainer(config, options);
  EXPECT_THROW(trainer.fit(), Error);
  std::ifstream in(std::filesystem::path(config.logging.dir) / "report.json");
  ASSERT_TRUE(in) << "no report.json for an error that is not UTF-8";
  const auto error = nlohmann::json::parse(in)["error"].get<std::string>();
  EXPECT_NE(error.find("cannot read '/data/caf\uFFFD/x.npy'"), std::string::npos) << error;
}

namespace {

// A collective that fails at step 3, as a peer rank's death makes it fail.
class FailingCollective final : public Callback {
 public:
  std::string name() const override { return "failing_collective"; }
  void on_step_end(RunControl&, std::int64_t step) override {
    if (step == 3) throw dist::CommunicationError("rank 0: gradient bucket 1 of step 3 did not finish within 60 s", "check rank 1's log");
  }
};

std::vector<nlohmann::json> alerts_of_failed_run(const std::string& name, std::vector<std::string> overrides) {
  const auto config = test_support::small_run(name, std::move(overrides));
  auto options = test_support::quiet_trainer();
  options.callbacks.push_back(std::make_shared<FailingCollective>());
  Trainer trainer(config, options);
  EXPECT_THROW(trainer.fit(), dist::CommunicationError);
  return test_support::jsonl_records(std::filesystem::path(config.logging.dir) / "metrics.jsonl", "alert");
}

}  // namespace

// The seed's "any NCCL error": the run ends with the error, and says the alert just before it.
TEST(Alerts, ACommunicationErrorIsAnAlertBeforeTheRunEndsWithIt) {
  const auto alerts = alerts_of_failed_run("alert-communication", {});
  ASSERT_EQ(alerts.size(), 1U);
  EXPECT_EQ(alerts[0]["alert"], "communication_error");
  EXPECT_EQ(alerts[0]["message"], "rank 0: gradient bucket 1 of step 3 did not finish within 60 s; check rank 1's log");
  EXPECT_EQ(alerts[0]["step"], 3);
  std::ifstream log(std::filesystem::path(test_support::small_run("alert-communication", {}, false).logging.dir) / "training.log");
  const std::string text{std::istreambuf_iterator<char>(log), {}};
  EXPECT_NE(text.find("warning: alert communication_error: rank 0: gradient bucket 1 of step 3"), std::string::npos) << text;

  EXPECT_TRUE(alerts_of_failed_run("alert-communication-off", {"logging.alerts.communication_error=off"}).empty());
}
