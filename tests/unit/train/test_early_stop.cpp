// Early stopping (train.early_stop_patience, train.early_stop_min_delta): the rule on its own, then
// whole runs: where they stop, the weights they end on, and how a resumed run carries on.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/fit_summary.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/damaged_copies.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/scratch_folder.hpp"
#include "support/small_run.hpp"
#include "support/usage_errors.hpp"
#include "train/loop/callbacks/early_stop.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;
using test_support::small_run;
using test_support::usage_error_and_fix;

namespace {

EarlyStopRule rule(const std::string& metric, bool maximize, std::int64_t patience, double min_delta) {
  return EarlyStopRule{metric, maximize, patience, min_delta};
}

NamedTensors copy_of(Model& model) {
  NamedTensors copy;
  for (const auto& [name, t] : model.named_state()) copy.emplace_back(name, t.clone());
  return copy;
}

bool same_weights(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !at::equal(a[i].second, b[i].second)) return false;
  return true;
}

}  // namespace

TEST(EarlyStop, AnImprovementMustBeatTheReferenceByMoreThanMinDeltaInTheMetricsDirection) {
  const auto lower = rule("val_loss", false, 3, 0.01);
  EXPECT_TRUE(lower.improves(0.48, 0.5));
  EXPECT_FALSE(lower.improves(0.495, 0.5));  // better, but not by more than 0.01
  EXPECT_FALSE(lower.improves(0.49, 0.5));   // exactly 0.01 is not more
  EXPECT_FALSE(lower.improves(0.6, 0.5));
  const auto higher = rule("val_accuracy", true, 3, 0);
  EXPECT_TRUE(higher.improves(0.81, 0.8));
  EXPECT_FALSE(higher.improves(0.8, 0.8));  // a tie is no improvement
  EXPECT_FALSE(higher.improves(0.7, 0.8));

  CheckpointConfig checkpoint;
  checkpoint.best_metric = "val_accuracy";
  EXPECT_TRUE(maximizes(checkpoint));  // auto: larger accuracy is better
  checkpoint.best_metric = "val_mae";
  EXPECT_FALSE(maximizes(checkpoint));
  checkpoint.best_mode = "max";
  EXPECT_TRUE(maximizes(checkpoint));
}

TEST(EarlyStop, CountsEpochsWithoutImprovementAndStartsAgainOnAnImprovement) {
  const auto r = rule("val_loss", false, 2, 0);
  EarlyStopState progress;
  EXPECT_EQ(observe_validation(r, progress, 0.9), "");  // the first validation sets the reference
  EXPECT_EQ(progress.early_stop_reference, 0.9);
  EXPECT_EQ(observe_validation(r, progress, 0.95),
            "val_loss 0.9500 has not improved on 0.9000: 1 of 2 epochs without improvement before the run stops "
            "(train.early_stop_patience)");
  EXPECT_FALSE(stopped_early(r, progress));
  EXPECT_EQ(observe_validation(r, progress, 0.7), "");  // better: the count starts again
  EXPECT_EQ(progress.epochs_without_improvement, 0);
  EXPECT_EQ(progress.early_stop_reference, 0.7);
  observe_validation(r, progress, 0.7);
  EXPECT_FALSE(stopped_early(r, progress));
  observe_validation(r, progress, 0.8);
  EXPECT_TRUE(stopped_early(r, progress));
  EXPECT_EQ(early_stop_reason(r, progress), "val_loss has not improved on 0.7000 for 2 epochs (train.early_stop_patience: 2)");

  // A margin keeps the reference where it was while the figure creeps: 0.695 and 0.69 are better
  // than 0.7, but not by more than 0.05.
  const auto margin = rule("val_loss", false, 2, 0.05);
  EarlyStopState creeping;
  observe_validation(margin, creeping, 0.7);
  EXPECT_NE(observe_validation(margin, creeping, 0.695).find("has not improved on 0.7000 by more than 0.05: 1 of 2"), std::string::npos);
  observe_validation(margin, creeping, 0.69);
  EXPECT_TRUE(stopped_early(margin, creeping));
  EXPECT_EQ(creeping.early_stop_reference, 0.7);

  // An accuracy is said as the epoch lines say it, and its margin in percentage points.
  const auto accuracy = rule("val_balanced_accuracy", true, 3, 0.005);
  EarlyStopState flat;
  observe_validation(accuracy, flat, 0.72);
  EXPECT_EQ(observe_validation(accuracy, flat, 0.7231),
            "val_balanced_accuracy 72.31% has not improved on 72.00% by more than 0.5 points: 1 of 3 epochs without improvement "
            "before the run stops (train.early_stop_patience)");

  const auto off = rule("val_loss", false, 0, 0);  // patience 0: nothing counted, never stops
  EarlyStopState untouched;
  for (double v : {0.5, 0.6, 0.7}) EXPECT_EQ(observe_validation(off, untouched, v), "");
  EXPECT_FALSE(untouched.early_stop_reference);
  EXPECT_FALSE(stopped_early(off, untouched));
}

TEST(EarlyStop, SettingsThatCannotWorkAreRefusedWithTheFix) {
  EXPECT_EQ(usage_error_and_fix([] {
              small_run("es-no-metric", {"train.early_stop_patience=3", "checkpoint.best_metric=none"});
            }),
            "config: train.early_stop_patience stops the run when checkpoint.best_metric stops improving, but checkpoint.best_metric is "
            "none\nset checkpoint.best_metric: val_loss, val_accuracy or val_balanced_accuracy, or train.early_stop_patience: 0");
  EXPECT_NE(usage_error_and_fix([] {
              small_run("es-no-val", {"train.early_stop_patience=3", "data.val_samples=0"});
            }).find("there is no validation data (data.val_samples is 0)\nset data.val_samples above 0, or train.early_stop_patience: 0"),
            std::string::npos);
  EXPECT_NE(usage_error_and_fix([] {
              small_run("es-delta-alone", {"train.early_stop_min_delta=0.01"});
            }).find("early stopping is off (train.early_stop_patience is 0)\nset train.early_stop_patience"),
            std::string::npos);

  // Files without validation data: known once the data is open.
  test_support::ScratchFolder folder("early-stop-csv");
  const auto csv = folder.path / "rows.csv";
  std::ofstream(csv) << "a,b,y\n1,2,0\n2,3,1\n3,4,0\n4,5,1\n";
  const auto config = small_run("es-csv", {"data.source=csv", "data.path=" + csv.string(), "data.labels=y", "data.classes=auto",
                                           "data.val_samples=0", "train.early_stop_patience=2"});
  EXPECT_EQ(usage_error_and_fix([&] { Trainer(config, test_support::quiet_trainer()); }),
            "train.early_stop_patience: 2 stops the run when its validation figure stops improving, but this run has no validation "
            "data\nset data.val_path (a validation file in the training data's format) or data.val_fraction: 0.1 (hold out a tenth "
            "of the training samples), or train.early_stop_patience: 0");
}

// best_mode against the metric's sense kept the worst epoch in best.pt, silently: noted before
// training (the tests below use it on purpose, to keep an earlier epoch than the last).
TEST(EarlyStop, ABestModeAgainstItsMetricIsNoted) {
  const auto note_for = [](const std::string& metric, const std::string& mode) {
    CheckpointConfig checkpoint;
    checkpoint.best_metric = metric;
    checkpoint.best_mode = mode;
    return best_mode_note(checkpoint);
  };
  EXPECT_EQ(note_for("val_loss", "max"),
            "checkpoint.best_mode max keeps the epoch with the highest val_loss, the worst by that figure (early stopping and scheduler "
            "plateau wait for it to rise); checkpoint.best_mode: auto takes min for losses and errors, max for accuracies");
  EXPECT_NE(note_for("val_balanced_accuracy_ema", "min").find("keeps the epoch with the lowest val_balanced_accuracy_ema"),
            std::string::npos);
  for (const auto& [metric, mode] : std::vector<std::pair<std::string, std::string>>{
           {"val_loss", "min"}, {"val_loss", "auto"}, {"val_accuracy", "max"}, {"val_mae", "min"}, {"none", "max"}})
    EXPECT_EQ(note_for(metric, mode), "") << metric << " " << mode;
  const auto run = test_support::fit_capturing_console(small_run("best-mode-note", {"train.epochs=1", "checkpoint.best_mode=max"}));
  EXPECT_NE(run.console.find("note: checkpoint.best_mode max keeps the epoch with the highest val_loss"), std::string::npos) << run.console;
}

// A margin no epoch can beat makes the stop exact: the first validation sets the reference, the
// next `patience` do not beat it. best.pt is kept by the highest val_loss (best_mode max): the
// first epoch's, before the loss fell, so the weights the run ends on are not its last ones.
TEST(EarlyStop, ARunStopsAfterPatienceEpochsOnItsBestEpochsWeightsAndAResumeCarriesOnCounting) {
  const std::vector<std::string> settings{
      "train.epochs=10",  "train.early_stop_patience=2", "train.early_stop_min_delta=1000", "checkpoint.best_mode=max", "model.dropout=0",
      "optimizer.lr=0.01"};
  const auto config = small_run("early-stop", settings);
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.epochs_done, 3);
  EXPECT_EQ(result.steps, 18);  // 6 per epoch
  const auto epochs = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "epoch");
  ASSERT_EQ(epochs.size(), 3u);
  char first_val_loss[32];
  std::snprintf(first_val_loss, sizeof first_val_loss, "%.4f", epochs[0]["val_loss"].get<double>());
  EXPECT_EQ(result.early_stop_reason, "val_loss has not improved on " + std::string(first_val_loss) +
                                          " by more than 1000 for 2 epochs (train.early_stop_patience: 2)");

  const auto highest =
      std::max_element(epochs.begin(), epochs.end(), [](const auto& a, const auto& b) { return a["val_loss"] < b["val_loss"]; });
  EXPECT_EQ(result.weights_epoch, highest - epochs.begin() + 1);
  ASSERT_LT(result.weights_epoch, 3) << "the loss should fall on this learnable task, leaving the best (highest) val_loss behind";
  EXPECT_EQ(result.weights_metric, (*highest)["val_loss"].get<double>());
  // training.log says so too, the figure written as every line writes a val_loss.
  std::ifstream log(fs::path(config.logging.dir) / "training.log");
  const std::string logged((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  const auto outcome = "model.safetensors holds epoch " + std::to_string(result.weights_epoch) + "'s weights (val_loss " +
                       metric_text("val_loss", (*highest)["val_loss"].get<double>()) + ", from ";
  EXPECT_NE(logged.find(outcome), std::string::npos) << outcome << "\n" << logged;

  // model.safetensors and the trainer's model hold best.pt's weights, not the last checkpoint's.
  const auto ended_on = copy_of(trainer.model());
  const auto saved = data::read_safetensors(result.weights_path);
  ASSERT_EQ(saved.size(), ended_on.size());
  for (std::size_t i = 0; i < saved.size(); ++i) EXPECT_TRUE(at::equal(saved[i].second, ended_on[i].second)) << saved[i].first;
  load_checkpoint_weights(config.checkpoint_dir() + "/best.pt", trainer.model(), c10::Device(at::kCPU));
  EXPECT_TRUE(same_weights(copy_of(trainer.model()), ended_on));
  load_checkpoint_weights(result.last_checkpoint, trainer.model(), c10::Device(at::kCPU));
  EXPECT_FALSE(same_weights(copy_of(trainer.model()), ended_on)) << "the run ended on its last weights";

  // Run again, it has nothing left to train and says why.
  const auto again = test_support::fit_capturing_console(small_run("early-stop", settings, /*fresh=*/false));
  EXPECT_EQ(again.result.start_step, 18);
  EXPECT_EQ(again.result.steps, 18);
  EXPECT_EQ(again.result.weights_epoch, result.weights_epoch);
  EXPECT_NE(again.console.find("nothing left to train: this run stopped early after epoch 3, as val_loss has not improved on"),
            std::string::npos)
      << again.console;

  // With more patience it goes on from its count (2 epochs without improvement): one more epoch.
  auto more = settings;
  more.push_back("train.early_stop_patience=3");
  Trainer patient(small_run("early-stop", more, /*fresh=*/false), test_support::quiet_trainer());
  const auto longer = patient.fit();
  EXPECT_EQ(longer.start_step, 18);
  EXPECT_EQ(longer.epochs_done, 4);
  EXPECT_EQ(longer.steps, 24);
  EXPECT_EQ(longer.weights_epoch, result.weights_epoch);
}

// A best.pt damaged on disk is refused before any weight is read from it, and the run ends on its
// last epoch's weights, saying why, as it does when best.pt is missing: the training is not lost.
TEST(EarlyStop, ADamagedBestPtLeavesTheLastWeightsAndSaysWhy) {
  const std::vector<std::string> settings{
      "train.epochs=10",  "train.early_stop_patience=2", "train.early_stop_min_delta=1000", "checkpoint.best_mode=max", "model.dropout=0",
      "optimizer.lr=0.01"};
  const auto config = small_run("early-stop-damaged", settings);
  const auto first = Trainer(config, test_support::quiet_trainer()).fit();
  ASSERT_NE(first.weights_epoch, 3) << "best.pt should hold an earlier epoch than the last";
  const auto best = config.checkpoint_dir() + "/best.pt";
  test_support::flip_a_bit_midway(best);

  const auto again = test_support::fit_capturing_console(small_run("early-stop-damaged", settings, /*fresh=*/false));
  EXPECT_EQ(again.result.weights_epoch, 0);
  EXPECT_NE(again.console.find("checkpoint '" + best + "' is damaged: its record '"), std::string::npos) << again.console;
  EXPECT_NE(again.console.find("after it was written, so model.safetensors holds the last epoch's weights"), std::string::npos)
      << again.console;
  Trainer reader(config, test_support::quiet_trainer());
  load_checkpoint_weights(again.result.last_checkpoint, reader.model(), c10::Device(at::kCPU));
  const auto saved = data::read_safetensors(again.result.weights_path);
  const auto last = copy_of(reader.model());
  ASSERT_EQ(saved.size(), last.size());
  for (std::size_t i = 0; i < saved.size(); ++i) EXPECT_TRUE(at::equal(saved[i].second, last[i].second)) << saved[i].first;
}

// Patience that runs out at the last epoch stopped nothing early: the summary says what happened
// (it said "stopped early after epoch 3 of 3"), and the run still ends on the best epoch's weights.
TEST(EarlyStop, PatienceRunningOutAtTheLastEpochIsNotCalledAnEarlyStop) {
  const auto config = small_run("early-stop-last", {"train.epochs=3", "train.early_stop_patience=2", "train.early_stop_min_delta=1000",
                                                    "checkpoint.best_mode=max", "model.dropout=0", "optimizer.lr=0.01"});
  const auto result = Trainer(config, test_support::quiet_trainer()).fit();
  ASSERT_EQ(result.epochs_done, 3);
  ASSERT_FALSE(result.early_stop_reason.empty());
  EXPECT_GT(result.weights_epoch, 0);
  const auto summary = fit_summary(result, config, false);
  EXPECT_EQ(summary.rfind("done: early stopping's patience ran out at the last epoch (3), 18 steps in ", 0), 0u) << summary;
  EXPECT_EQ(summary.find("stopped early"), std::string::npos) << summary;
}

// Without early stopping, a run that validates ends on its last weights as before.
TEST(EarlyStop, OffARunEndsOnItsLastWeights) {
  Trainer trainer(small_run("early-stop-off", {"train.epochs=3", "checkpoint.best_mode=max"}), test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.steps, 18);
  EXPECT_TRUE(result.early_stop_reason.empty());
  EXPECT_EQ(result.weights_epoch, 0);
  const auto ended_on = copy_of(trainer.model());
  load_checkpoint_weights(result.last_checkpoint, trainer.model(), c10::Device(at::kCPU));
  EXPECT_TRUE(same_weights(copy_of(trainer.model()), ended_on));
}
