#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gputrain/train/metrics.hpp"
#include "support/file_size_limit.hpp"
#include "support/jsonl_records.hpp"
#include "support/run_info.hpp"
#include "support/scratch_folder.hpp"
#include "support/text_checks.hpp"
#include "support/tfrecords.hpp"
#include "train/report/human_lines.hpp"  // private: the lines training.log and the console share

using gputrain::test_support::contains;
using namespace gputrain::train;
using gputrain::test_support::small_run_info;

namespace {

StepMetrics step(std::int64_t n) {
  StepMetrics m;
  m.step = n;
  m.loss = 0.5;
  m.samples_per_second = 1000;
  m.data_seconds = 0.01;
  m.compute_seconds = 0.09;
  m.eta_seconds = 62;
  return m;
}

}  // namespace

TEST(ConsoleSink, BarRedrawsOneLineInPlace) {
  std::ostringstream out;
  auto sink = make_console_sink("bar", out);
  sink->on_start(small_run_info());
  sink->on_step(step(50));
  sink->on_step(step(100));
  sink->on_end();
  const auto text = out.str();
  EXPECT_NE(text.find("\repoch 1/2 [############------------] 50/100 loss 0.5000"), std::string::npos) << text;
  EXPECT_NE(text.find("[########################] 100/100"), std::string::npos) << text;
  EXPECT_NE(text.find("data 10% ETA 1:02"), std::string::npos) << text;
}

TEST(ConsoleSink, LinesModePrintsOneLinePerReport) {
  std::ostringstream out;
  auto sink = make_console_sink("lines", out);
  sink->on_start(small_run_info());
  sink->on_step(step(10));
  EpochMetrics e;
  e.train_loss = 0.4;
  e.val_loss = 0.3;
  e.val_accuracy = 0.875;
  sink->on_epoch(e);
  const auto text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("training mlp (1,234 parameters) on cpu, fp32, batch 32 x 1 accumulation, 100 steps (50 per epoch)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("step 10/100 epoch 1 loss 0.5000 lr 0 1000 samples/s data stall 10.0% ETA 1:02\n"), std::string::npos) << text;
  EXPECT_NE(text.find("epoch 1/2 done in 0:00: train loss 0.4000, val loss 0.3000, val accuracy 87.50%"), std::string::npos) << text;
}

TEST(EpochLine, GivesTheBalancedAccuracyWhereTheRunSaysItMatters) {
  EpochMetrics e;
  e.train_loss = 0.4;
  e.val_accuracy = 0.9;
  e.val_balanced_accuracy = 0.625;
  EXPECT_EQ(epoch_line(e, 2, false), "epoch 1/2 done in 0:00: train loss 0.4000, val accuracy 90.00%");
  EXPECT_EQ(epoch_line(e, 2, true), "epoch 1/2 done in 0:00: train loss 0.4000, val accuracy 90.00% (balanced 62.50%)");
}

TEST(ClassReportLine, GivesEachClasssRecallAndPrecisionUpToEightClassesElseTheLowestRecalls) {
  EpochMetrics e;
  e.epoch = 7;
  e.val_class_samples = {20, 0, 180};
  e.val_class_right = {14, 0, 171};
  e.val_class_predicted = {23, 2, 175};
  EXPECT_EQ(class_report_line(e, {"churn", "none", "stay"}, "val per class after epoch 8"),
            "val per class after epoch 8: 'churn' 14 of 20 found (recall 70.0 %), 14 of 23 predictions right (precision 60.9 %); "
            "'stay' 171 of 180 found (recall 95.0 %), 171 of 175 predictions right (precision 97.7 %)")
      << "a class without validation samples has no recall to give";
  e.val_class_predicted = {0, 0, 200};
  EXPECT_EQ(class_report_line(e, {}, "val per class after epoch 8"),
            "val per class after epoch 8: class 0 14 of 20 found (recall 70.0 %), never predicted; "
            "class 2 171 of 180 found (recall 95.0 %), 171 of 200 predictions right (precision 85.5 %)");
  e.val_class_samples.assign(10, 10);
  e.val_class_right = {9, 9, 3, 9, 9, 1, 9, 9, 3, 9};
  e.val_class_predicted = {9, 9, 3, 9, 9, 1, 9, 9, 3, 9};
  e.val_class_predicted[0] += 30;  // the wrong answers
  EXPECT_EQ(class_report_line(e, {}, "val per class after epoch 8"),
            "val per class after epoch 8, the 3 lowest recalls of 10: class 5 1 of 10 found (recall 10.0 %), 1 of 1 predictions right "
            "(precision 100.0 %); class 2 3 of 10 found (recall 30.0 %), 3 of 3 predictions right (precision 100.0 %); "
            "class 8 3 of 10 found (recall 30.0 %), 3 of 3 predictions right (precision 100.0 %)");
  EXPECT_EQ(class_report_line(EpochMetrics{}, {}, "per class"), "");
}

TEST(MetricText, AnAccuracyIsAPercentageAndAnyOtherFigureHasFourDecimals) {
  EXPECT_EQ(metric_text("val_accuracy", 0.800719), "80.07%");
  EXPECT_EQ(metric_text("val_balanced_accuracy", 0.5), "50.00%");
  EXPECT_EQ(metric_text("val_loss", 1.410229), "1.4102");
  EXPECT_EQ(metric_text("val_mae", 17378.25), "17378.2500");
  EXPECT_TRUE(is_accuracy_metric("val_balanced_accuracy"));
  EXPECT_FALSE(is_accuracy_metric("val_mse"));
}

TEST(ConsoleSink, OffPrintsNothing) {
  std::ostringstream out;
  auto sink = make_console_sink("off", out);
  sink->on_start(small_run_info());
  sink->on_step(step(1));
  EXPECT_TRUE(out.str().empty());
}

TEST(FormatDuration, MinutesAndHoursUpToAMillionHours) {
  EXPECT_EQ(format_duration(5), "0:05");
  EXPECT_EQ(format_duration(62), "1:02");
  EXPECT_EQ(format_duration(3725), "1:02:05");
  EXPECT_EQ(format_duration(3600.0 * 1e6 - 1), "999999:59:59");
  EXPECT_EQ(format_duration(5.5e20), "over 1000000:00:00");  // 9.2e18 steps of a minute: past a long
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "over 1000000:00:00");
}

TEST(DataStallAdvice, SaysWhatToChangeForWhereTheDataLives) {
  using gputrain::train::data_stall_advice;
  EXPECT_EQ(data_stall_advice(4.0, 500, "none"), "") << "a small stall needs no advice";
  EXPECT_EQ(data_stall_advice(60.0, 19, "none"), "") << "under 20 steps the start-up dominates";
  const auto streamed = data_stall_advice(35.0, 500, "none");
  EXPECT_NE(streamed.find("waited for data 35% of the time"), std::string::npos) << streamed;
  EXPECT_NE(streamed.find("gputrain profile"), std::string::npos) << streamed;
  EXPECT_NE(streamed.find("data.cache: vram or ram"), std::string::npos) << streamed;
  EXPECT_NE(data_stall_advice(12.0, 500, "ram").find("data.cache: vram"), std::string::npos);
  EXPECT_NE(data_stall_advice(12.0, 500, "vram").find("train.batch_size"), std::string::npos);
}

// A run that stopped mid-write (a full disk, a kill) leaves a half line at the end of its files;
// the run that resumes must not append its first record to it.
TEST(FileSinks, AHalfWrittenLastLineIsDroppedFromMetricsJsonlAndEndedInTrainingLog) {
  gputrain::test_support::ScratchFolder folder("half-lines");
  const auto jsonl = (folder.path / "metrics.jsonl").string();
  const auto log = (folder.path / "training.log").string();
  std::ofstream(jsonl) << "{\"kind\": \"step\", \"step\": 1}\n{\"kind\": \"step\", \"st";
  std::ofstream(log) << "2026-11-24 10:00:00 step 1\n2026-11-24 10:00:01 ste";
  {
    auto sink = make_jsonl_sink(jsonl);
    sink->on_start(small_run_info());
    auto log_sink = make_log_file_sink(log);
    log_sink->on_note("resumed");
  }
  std::ifstream records(jsonl);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(records, line);) {
    try {
      lines.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << "not a JSON record: " << line;
    }
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 1);
  EXPECT_EQ(lines[1]["kind"], "start");

  std::ifstream text(log);
  std::vector<std::string> log_lines;
  for (std::string line; std::getline(text, line);) log_lines.push_back(line);
  ASSERT_EQ(log_lines.size(), 3u);
  EXPECT_EQ(log_lines[1], "2026-11-24 10:00:01 ste");
  EXPECT_NE(log_lines[2].find(" resumed"), std::string::npos) << log_lines[2];
}

namespace {

// A sink's warnings, as the trainer would show them.
struct Warnings {
  std::vector<std::string> lines;
  SinkWarning take() {
    return [this](const std::string& line) { lines.push_back(line); };
  }
};

// Steps 1-2 are written, 3-5 refused (the file may not grow), 6 written again; `end_refused`
// keeps step 6 refused too, so the run ends with the file still refused.
void run_through_a_refusal(MetricSink& sink, const std::filesystem::path& file, bool end_refused = false) {
  gputrain::test_support::FileSizeLimit limit;
  sink.on_start(small_run_info());
  sink.on_step(step(1));
  sink.on_step(step(2));
  limit.set(std::filesystem::file_size(file) + 3);  // a few bytes: part of the next record fits
  for (int n = 3; n <= 5; ++n) sink.on_step(step(n));
  if (!end_refused) limit.lift();
  sink.on_step(step(6));
  sink.on_end();
}

std::filesystem::path events_file(const std::filesystem::path& folder) {
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) return entry.path();
  return {};
}

void expect_warned_then_written_again(const Warnings& warnings, const std::string& path) {
  ASSERT_EQ(warnings.lines.size(), 2u);
  EXPECT_TRUE(contains(warnings.lines[0], "warning: cannot write '" + path + "' (File too large)")) << warnings.lines[0];
  EXPECT_TRUE(contains(warnings.lines[0], "records from step 3 on are dropped")) << warnings.lines[0];
  EXPECT_TRUE(contains(warnings.lines[0], "training goes on. Fix: ")) << warnings.lines[0];
  EXPECT_TRUE(contains(warnings.lines[0], "ulimit -f")) << warnings.lines[0];
  EXPECT_EQ(warnings.lines[1], "'" + path + "' is written again from step 6; 3 records of steps 3-5 are missing");
}

}  // namespace

// A disk that refuses a run file's records (full, over quota) must neither stop the run nor leave
// it silent: the records are dropped whole, the file stays readable, and the warnings say which
// steps miss theirs.
TEST(FileSinks, RecordsTheDiskRefusesAreDroppedWholeWithAWarningAndMetricsJsonlStaysReadable) {
  gputrain::test_support::ScratchFolder folder("refused-jsonl");
  const auto path = folder.path / "metrics.jsonl";
  Warnings warnings;
  auto sink = make_jsonl_sink(path.string(), warnings.take());
  run_through_a_refusal(*sink, path);
  expect_warned_then_written_again(warnings, path.string());
  std::vector<std::int64_t> steps;
  for (const auto& record : gputrain::test_support::jsonl_records(path, "step")) steps.push_back(record["step"]);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 6}));
}

TEST(FileSinks, RecordsTheDiskRefusesAreDroppedWholeWithAWarningAndTrainingLogKeepsWholeLines) {
  gputrain::test_support::ScratchFolder folder("refused-log");
  const auto path = folder.path / "training.log";
  Warnings warnings;
  auto sink = make_log_file_sink(path.string(), warnings.take());
  run_through_a_refusal(*sink, path);
  expect_warned_then_written_again(warnings, path.string());
  std::ifstream text(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);  // the header, steps 1, 2 and 6
  EXPECT_TRUE(contains(lines[1], "step 1/100")) << lines[1];
  EXPECT_TRUE(contains(lines[3], "step 6/100")) << lines[3];
}

TEST(FileSinks, RecordsTheDiskRefusesAreDroppedWholeWithAWarningAndTensorBoardReadsTheRest) {
  gputrain::test_support::ScratchFolder folder("refused-tensorboard");
  Warnings warnings;
  auto sink = make_tensorboard_sink(folder.path.string(), warnings.take());
  const auto path = events_file(folder.path);
  run_through_a_refusal(*sink, path);
  expect_warned_then_written_again(warnings, path.string());
  const auto records = gputrain::test_support::read_tfrecords(path);
  EXPECT_TRUE(records.whole);
  EXPECT_EQ(records.events.size(), 1u + 3 * 4);  // file_version, then 4 scalars of steps 1, 2 and 6
}

TEST(FileSinks, AFileStillRefusedAtTheEndSaysWhatItMisses) {
  gputrain::test_support::ScratchFolder folder("refused-to-the-end");
  const auto path = folder.path / "metrics.jsonl";
  Warnings warnings;
  auto sink = make_jsonl_sink(path.string(), warnings.take());
  run_through_a_refusal(*sink, path, /*end_refused=*/true);
  ASSERT_EQ(warnings.lines.size(), 2u);
  EXPECT_EQ(warnings.lines[1],
            "warning: '" + path.string() + "' could not be written to the end (File too large): 4 records of steps 3-6 are missing");
  EXPECT_EQ(gputrain::test_support::jsonl_records(path, "step").size(), 2u);
}

// metrics.jsonl counts epochs from 1, as the console does, and says so with its schema version.
TEST(FileSinks, JsonlRecordsCarryTheirSchemaAndOneBasedEpochs) {
  gputrain::test_support::ScratchFolder folder("jsonl-schema");
  const auto path = folder.path / "metrics.jsonl";
  {
    auto sink = make_jsonl_sink(path.string());
    sink->on_start(small_run_info());
    StepMetrics step;
    step.step = 3;
    step.epoch = 0;
    sink->on_step(step);
    EpochMetrics epoch;
    epoch.epoch = 0;
    epoch.step = 3;
    sink->on_epoch(epoch);
  }
  for (const char* kind : {"start", "step", "epoch"})
    for (const auto& record : gputrain::test_support::jsonl_records(path, kind)) EXPECT_EQ(record["schema"], "gputrain.metrics/2") << kind;
  EXPECT_EQ(gputrain::test_support::jsonl_records(path, "step").at(0)["epoch"], 1);
  EXPECT_EQ(gputrain::test_support::jsonl_records(path, "epoch").at(0)["epoch"], 1);
}

// The bar fits the terminal: never wider than columns - 1, so a narrow pane does not wrap it.
TEST(BarLine, FitsTheTerminalsWidthNarrowingTheBarThenDroppingFigures) {
  StepMetrics m;
  m.step = 50;
  m.loss = 0.5;
  m.samples_per_second = 1234;
  m.eta_seconds = 62;
  EXPECT_EQ(bar_line(m, 100, 2, 200), "epoch 1/2 [############------------] 50/100 loss 0.5000 1234 samples/s data 0% ETA 1:02");
  for (int columns : {100, 80, 60, 40, 20}) {
    const auto line = bar_line(m, 100, 2, columns);
    EXPECT_LE(static_cast<int>(line.size()), columns - 1) << line;
    EXPECT_EQ(line.rfind("epoch 1/2 [", 0), 0U) << line;
  }
  EXPECT_EQ(bar_line(m, 100, 2, 5), "epoc");  // cut, never wrapped
  EXPECT_EQ(bar_line(m, 100, 2, 80), "epoch 1/2 [########--------] 50/100 loss 0.5000 1234 samples/s data 0% ETA 1:02");
  EXPECT_EQ(bar_line(m, 100, 2, 60), "epoch 1/2 [#########----------] 50/100 loss 0.5000 ETA 1:02");
  EXPECT_EQ(bar_line(m, 100, 2, 40), "epoch 1/2 [#####------] 50/100 ETA 1:02");
}
