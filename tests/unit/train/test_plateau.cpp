// scheduler: plateau's rule after each validation, as PyTorch's ReduceLROnPlateau decides it
// (threshold 0, cooldown 0); tests/cli/check_train.py (mode plateau) compares whole runs with it.
#include <gtest/gtest.h>

#include <vector>

#include <fstream>

#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/scratch_folder.hpp"
#include "support/small_run.hpp"
#include "support/usage_errors.hpp"
#include "train/loop/callbacks/plateau.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

Config plateau(std::int64_t patience, double gamma, const std::string& metric = "val_loss") {
  Config c;
  c.optimizer.lr = 0.01;
  c.scheduler.name = "plateau";
  c.scheduler.patience = patience;
  c.scheduler.gamma = gamma;
  c.checkpoint.best_metric = metric;
  return c;
}

}  // namespace

TEST(Plateau, DecaysAfterMoreThanPatienceValidationsWithoutABetterValueAndCountsAgain) {
  const auto c = plateau(2, 0.5);
  PlateauState p;
  EXPECT_EQ(observe_plateau(c, p, 1.0), "");   // the first value is the reference
  EXPECT_EQ(observe_plateau(c, p, 0.9), "");   // better
  EXPECT_EQ(observe_plateau(c, p, 0.9), "");   // equal is not better: 1
  EXPECT_EQ(observe_plateau(c, p, 0.95), "");  // 2 = patience: still allowed
  EXPECT_EQ(p.plateau_scale, 1.0);
  EXPECT_EQ(
      observe_plateau(c, p, 0.91),
      "val_loss has not improved on 0.9000 for 3 epochs (scheduler.patience: 2): learning rate 0.01 -> 0.005 (x scheduler.gamma 0.5)");
  EXPECT_EQ(p.plateau_scale, 0.5);
  EXPECT_EQ(p.plateau_epochs_without_improvement, 0);  // the count starts again after a decay
  EXPECT_EQ(p.plateau_reference, 0.9);                 // the reference stays the best value
  EXPECT_EQ(observe_plateau(c, p, 0.92), "");
  EXPECT_EQ(observe_plateau(c, p, 0.85), "");  // better: the count starts again
  EXPECT_EQ(p.plateau_epochs_without_improvement, 0);
  EXPECT_EQ(p.plateau_reference, 0.85);
  EXPECT_EQ(p.plateau_scale, 0.5);
}

TEST(Plateau, PatienceZeroDecaysOnTheFirstValidationThatIsNotBetterAndAnAccuracyMustRise) {
  const auto c = plateau(0, 0.1, "val_accuracy");
  PlateauState p;
  observe_plateau(c, p, 0.70);
  EXPECT_EQ(observe_plateau(c, p, 0.72), "");
  EXPECT_EQ(
      observe_plateau(c, p, 0.71),
      "val_accuracy has not improved on 72.00% for 1 epoch (scheduler.patience: 0): learning rate 0.01 -> 0.001 (x scheduler.gamma 0.1)");
  EXPECT_NEAR(p.plateau_scale, 0.1, 1e-15);
}

TEST(Plateau, TheFloorHoldsTheRateAndThenNothingMoreIsSaid) {
  auto c = plateau(0, 0.5);
  c.scheduler.min_lr = 0.004;
  PlateauState p;
  observe_plateau(c, p, 1.0);
  EXPECT_NE(observe_plateau(c, p, 1.0).find("learning rate 0.01 -> 0.005 (x scheduler.gamma 0.5)"), std::string::npos);
  EXPECT_EQ(observe_plateau(c, p, 1.0),
            "val_loss has not improved on 1.0000 for 1 epoch (scheduler.patience: 0): learning rate 0.005 -> 0.004, the floor "
            "(scheduler.min_lr)");
  EXPECT_EQ(observe_plateau(c, p, 1.0), "") << "at the floor already";
}

TEST(Plateau, OtherSchedulersLeaveTheProgressAsItIs) {
  auto c = plateau(0, 0.5);
  c.scheduler.name = "cosine";
  PlateauState p;
  for (const double value : {1.0, 2.0, 3.0}) EXPECT_EQ(observe_plateau(c, p, value), "");
  EXPECT_FALSE(p.plateau_reference.has_value());
  EXPECT_EQ(p.plateau_scale, 1.0);
}

TEST(Plateau, SettingsThatCannotWorkAreRefusedWithTheFix) {
  using test_support::small_run;
  using test_support::usage_error_and_fix;
  EXPECT_EQ(usage_error_and_fix([] {
              small_run("plateau-no-metric", {"scheduler.name=plateau", "checkpoint.best_metric=none"});
            }),
            "config: scheduler.name plateau lowers the learning rate when checkpoint.best_metric stops improving, but "
            "checkpoint.best_metric is none\nset checkpoint.best_metric: val_loss, val_accuracy or val_balanced_accuracy, or pick "
            "another scheduler.name");
  EXPECT_NE(usage_error_and_fix([] {
              small_run("plateau-no-val", {"scheduler.name=plateau", "data.val_samples=0"});
            }).find("there is no validation data (data.val_samples is 0)\nset data.val_samples above 0, or pick another scheduler.name"),
            std::string::npos);
  // Files without validation data: known once the data is open.
  test_support::ScratchFolder folder("plateau-csv");
  const auto csv = folder.path / "rows.csv";
  std::ofstream(csv) << "a,b,y\n1,2,0\n2,3,1\n3,4,0\n4,5,1\n";
  const auto config = small_run("plateau-csv", {"data.source=csv", "data.path=" + csv.string(), "data.labels=y", "data.classes=auto",
                                                "data.val_samples=0", "scheduler.name=plateau"});
  EXPECT_EQ(usage_error_and_fix([&] { Trainer(config, test_support::quiet_trainer()); }),
            "scheduler.name plateau lowers the learning rate when its validation figure stops improving, but this run has no "
            "validation data\nset data.val_path (a validation file in the training data's format) or data.val_fraction: 0.1 (hold "
            "out a tenth of the training samples), or pick another scheduler.name");
}

TEST(Plateau, EarlyStoppingThatWouldEndTheRunBeforeTheFirstDecayIsNamed) {
  auto c = plateau(2, 0.5);
  c.train.early_stop_patience = 3;  // stops after 3 epochs without improvement; the decay comes after 3 too
  EXPECT_EQ(plateau_patience_note(c),
            "train.early_stop_patience 3 stops the run after 3 epochs without improvement, as scheduler: plateau first lowers the rate "
            "(after 3 epochs, scheduler.patience 2 + 1), so no epoch trains at the lowered rate; set train.early_stop_patience: 6 or a "
            "smaller scheduler.patience");
  c.train.early_stop_patience = 1;
  EXPECT_NE(plateau_patience_note(c).find("after 1 epoch without improvement, before scheduler: plateau"), std::string::npos);
  c.train.early_stop_patience = 4;  // one epoch at the lowered rate before it could stop
  EXPECT_EQ(plateau_patience_note(c), "");
  c.train.early_stop_patience = 0;
  EXPECT_EQ(plateau_patience_note(c), "");
  c.train.early_stop_patience = 1;
  c.scheduler.name = "cosine";
  EXPECT_EQ(plateau_patience_note(c), "");
}
