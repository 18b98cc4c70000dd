// Trainer across runs: resuming exactly where a stopped run left off, what a resume refuses or names
// when the config or data changed, initial weights, kept checkpoints and one run per folder.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/tensor_checks.hpp"
#include "support/text_checks.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;
using test_support::expect_bit_identical;
using test_support::lines_containing;
using test_support::model_state;
using test_support::small_run;

namespace {

// A run of `config` stopped as SIGINT stops it, after step `step`.
FitResult fit_stopping_after(const Config& config, std::int64_t step) {
  core::clear_stop_request();
  auto options = test_support::quiet_trainer();
  options.after_step = [step](std::int64_t done) {
    if (done == step) core::request_stop();
  };
  Trainer trainer(config, options);
  const auto result = trainer.fit();
  core::clear_stop_request();
  return result;
}

}  // namespace

// Resuming with another optimizer cannot load its state (LibTorch fails with an internal assert):
// the run is refused before it starts, naming both optimizers.
TEST(Trainer, ResumingWithAnotherOptimizerIsAClearError) {
  Trainer first(small_run("other-optimizer", {"optimizer.name=adamw"}), test_support::quiet_trainer());
  first.fit();
  try {
    Trainer second(small_run("other-optimizer", {"optimizer.name=sgd", "train.epochs=3"}, /*fresh=*/false), test_support::quiet_trainer());
    ADD_FAILURE() << "resumed adamw's state into sgd";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds the state of optimizer.name adamw, and this config asks for sgd"), std::string::npos)
        << e.what();
  }
}

// A step of the checkpoint must be a step of the resumed run: the schedule, the step budget and
// the epoch position count them. Another split of the same global batch is the same run.
TEST(Trainer, ResumingWithAnotherGlobalBatchIsRefusedButAnotherSplitOfItIsNot) {
  const auto first = small_run("other-batch", {"train.max_steps=3"});
  Trainer(first, test_support::quiet_trainer()).fit();
  try {
    Trainer(small_run("other-batch", {"train.batch_size=8"}, /*fresh=*/false), test_support::quiet_trainer());
    ADD_FAILURE() << "resumed a batch-16 run at batch 8";
  } catch (const UsageError& e) {
    const std::string what = e.what(), fix = e.remedy();
    EXPECT_NE(
        what.find("was trained with a global batch of 16 samples per step (1 rank), and this run's is 8 x 1 accumulation x 1 rank = 8"),
        std::string::npos)
        << what;
    EXPECT_NE(fix.find("train.batch_size x train.grad_accum x ranks = 16 (it ran train.batch_size: 16, train.grad_accum: 1;"),
              std::string::npos)
        << fix;
  }
  // The refused run left the run's config.yaml as it was.
  EXPECT_EQ(lines_containing(fs::path(first.logging.dir) / "config.yaml", "batch_size: 16"), 1);
  const auto [result, console] = test_support::fit_capturing_console(
      small_run("other-batch", {"train.batch_size=8", "train.grad_accum=2", "train.max_steps=5"}, false));
  EXPECT_EQ(result.start_step, 3);
  EXPECT_EQ(result.steps, 5);
  const auto resumed = console.find("resumed from " + first.checkpoint_dir() + "/step-00000003.pt at step 3\n");
  const auto differs =
      console.find("note: the config differs from the one " + first.checkpoint_dir() + "/step-00000003.pt was written with");
  EXPECT_NE(resumed, std::string::npos) << console;
  EXPECT_NE(differs, std::string::npos) << console;  // this note used to be made before the console was there to say it
  EXPECT_LT(resumed, differs) << console;
}

// On the CPU's ample RAM `auto` takes the whole small dataset: allowed, but said, with the cap to
// set. A resume under that cap cannot keep the checkpoint's batch, and the refusal says what
// `auto` had found.
TEST(Trainer, AnAutoBatchOfAlmostAllTheDataIsNotedAndItsResumeNamesWhatItFound) {
  const auto first = small_run("auto-whole", {"train.batch_size=auto", "train.max_steps=1", "logging.progress=lines"});
  const auto [result, console] = test_support::fit_capturing_console(first);
  EXPECT_EQ(result.batch_size, 96);
  EXPECT_NE(console.find("batch_size auto: 96 leaves 1 step per epoch: memory allows it, but so few steps learn little at the usual "
                         "learning rates; cap it with train.max_batch_size (e.g. 2)"),
            std::string::npos)
      << console;
  try {
    Trainer(small_run("auto-whole", {"train.batch_size=auto", "train.max_batch_size=32"}, /*fresh=*/false), test_support::quiet_trainer());
    ADD_FAILURE() << "resumed a batch-96 run at batch 32";
  } catch (const UsageError& e) {
    EXPECT_NE(e.remedy().find("(it ran train.batch_size: auto (which found 96), train.grad_accum: 1; on a smaller device"),
              std::string::npos)
        << e.remedy();
  }
}

// Data that gained samples since the checkpoint resumes, says the epoch's order changed, and ends
// where its epochs do.
TEST(Trainer, ResumingOnDataOfAnotherSizeSaysTheEpochOrderChanged) {
  const auto first = small_run("other-size", {"train.max_steps=3"});
  Trainer(first, test_support::quiet_trainer()).fit();
  const auto [result, console] =
      test_support::fit_capturing_console(small_run("other-size", {"data.samples=112", "train.max_steps=5"}, /*fresh=*/false));
  EXPECT_EQ(result.start_step, 3);
  EXPECT_NE(console.find("note: the training data has 112 samples, and " + first.checkpoint_dir() +
                         "/step-00000003.pt's run had 96: the epoch order changes with the count"),
            std::string::npos)
      << console;
  // Resumed at an epoch's end with more samples (8 steps an epoch, not 6), the run ends with its
  // epochs: 6 + 8 steps. Counted as 2 epochs x 8 it went on into a third epoch, to step 16.
  const auto one_epoch = small_run("other-size-epochs", {"train.epochs=1"});
  Trainer(one_epoch, test_support::quiet_trainer()).fit();
  const auto more = test_support::fit_capturing_console(small_run("other-size-epochs", {"data.samples=128"}, /*fresh=*/false));
  EXPECT_EQ(more.result.start_step, 6);
  EXPECT_EQ(more.result.total_steps, 14);
  EXPECT_EQ(more.result.steps, 14);
  EXPECT_EQ(more.result.epochs_done, 2);
  EXPECT_NE(more.console.find("'s run had 96: the run ends at step 14, the end of its epochs at 8 steps each"), std::string::npos)
      << more.console;
}

// Training longer stretches a cosine schedule: the resumed run names the changed key and the jump
// of the learning rate at the step it resumes with; a change the schedule ignores gives no such note.
TEST(Trainer, ResumingWithMoreEpochsNamesTheChangeAndTheLearningRateJump) {
  const std::vector<std::string> cosine{"scheduler.name=cosine", "optimizer.lr=0.1"};
  const auto first = small_run("longer", cosine);  // 2 epochs of 6 steps
  Trainer(first, test_support::quiet_trainer()).fit();
  auto longer = cosine;
  longer.push_back("train.epochs=4");
  const auto [result, console] = test_support::fit_capturing_console(small_run("longer", longer, /*fresh=*/false));
  EXPECT_EQ(result.start_step, 12);
  const auto checkpoint = first.checkpoint_dir() + "/step-00000012.pt";
  EXPECT_NE(console.find("note: the config differs from the one " + checkpoint +
                         " was written with: train.epochs 2 -> 4, "
                         "logging.progress off -> lines (both are kept"),
            std::string::npos)
      << console;
  // Cosine from 0.1 to 0 at the last step: index 12 of 24 is 0.1 x (1 + cos(pi x 12/23)) / 2 = 0.0466;
  // the 12-step schedule had reached 0 at its last step.
  EXPECT_NE(console.find("note: the learning-rate schedule changes with the config (cosine over 24 steps): step 13 runs at lr 0.0466, "
                         "where step 12 ran at 0\n"),
            std::string::npos)
      << console;

  // A change the schedule does not read: the config note, but no rate note.
  auto reporting = longer;
  reporting.push_back("logging.every_steps=3");
  const auto [again, quiet] = test_support::fit_capturing_console(small_run("longer", reporting, /*fresh=*/false));
  EXPECT_NE(quiet.find("logging.every_steps 2 -> 3"), std::string::npos) << quiet;
  EXPECT_EQ(quiet.find("learning-rate schedule changes"), std::string::npos) << "the schedule did not change: " << quiet;

  // Fewer epochs than the checkpoint has done: the rate changes (a floor where it had reached 0),
  // but no step runs at it.
  auto shorter_run = cosine;
  shorter_run.push_back("scheduler.min_lr=0.01");
  const auto [none, shorter] = test_support::fit_capturing_console(small_run("longer", shorter_run, /*fresh=*/false));
  EXPECT_EQ(none.steps, 24);
  EXPECT_NE(shorter.find("nothing left to train"), std::string::npos) << shorter;
  EXPECT_EQ(shorter.find("learning-rate schedule changes"), std::string::npos) << "no step runs at the changed rate: " << shorter;
}

// model.init_weights starts a new run from a finished run's model.safetensors or from a gputrain
// checkpoint's weights (fine-tuning from it); a folder or a missing file is named as such.
TEST(Trainer, InitWeightsComeFromWeightsOrACheckpoint) {
  Trainer source(small_run("init-source", {"train.epochs=1"}), test_support::quiet_trainer());
  const auto result = source.fit();
  const auto trained = model_state(source);
  for (const auto& weights : {result.weights_path, result.last_checkpoint}) {
    Trainer started(small_run("init-started", {"model.init_weights=" + weights}), test_support::quiet_trainer());
    expect_bit_identical(model_state(started), trained);
  }
  const auto refusal = [](const std::string& weights) {
    try {
      Trainer(small_run("init-refused", {"model.init_weights=" + weights}), test_support::quiet_trainer());
    } catch (const UsageError& e) {
      return std::string(e.what()) + " | fix: " + e.remedy();
    }
    ADD_FAILURE() << weights << " was taken";
    return std::string();
  };
  const auto folder = fs::path(result.weights_path).parent_path().string();
  EXPECT_NE(refusal(folder).find("model.init_weights: '" + folder +
                                 "' is a folder, not a weights file | fix: set model.init_weights: " + result.weights_path),
            std::string::npos)
      << refusal(folder);
  EXPECT_NE(refusal(folder + "/no-such.safetensors").find("does not exist"), std::string::npos);
  EXPECT_EQ(refusal(folder + "/no-such.safetensors").find("data.path"), std::string::npos) << "not the data's key";
}

// A folder holding another model's checkpoints is another run's folder: say so, not which tensor
// does not fit. The same model resized is the same run changed: the tensor is named.
TEST(Trainer, ResumingAnotherModelsFolderSaysItIsAnotherRunsAndAResizedModelNamesTheTensor) {
  Trainer(small_run("other-model", {"train.max_steps=2"}), test_support::quiet_trainer()).fit();
  try {
    Trainer(small_run("other-model", {"model.name=transformer", "data.shape=[4, 8]"}, /*fresh=*/false), test_support::quiet_trainer());
    ADD_FAILURE() << "resumed an mlp's checkpoint into a transformer";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is a checkpoint of mlp, and this config trains transformer: the folder looks like another run's"),
              std::string::npos)
        << e.what();
    const auto remedy = e.remedy();
    EXPECT_NE(remedy.find("--set logging.dir="), std::string::npos) << remedy;
    EXPECT_EQ(remedy.find("--set logging.dir=", remedy.find("--set logging.dir=") + 1), std::string::npos) << "said twice: " << remedy;
  }
  try {
    Trainer(small_run("other-model", {"model.hidden=[64, 16]"}, /*fresh=*/false), test_support::quiet_trainer());
    ADD_FAILURE() << "resumed [32, 16] weights into [64, 16]";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in the checkpoint but"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("was written with: model.hidden [32, 16] -> [64, 16])"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("--set logging.dir="), std::string::npos) << e.remedy();
  }
}

// A run stopped mid-epoch and resumed ends with bit-identical parameters (CPU, deterministic).
TEST(Trainer, StoppedAndResumedRunMatchesAnUninterruptedOneExactly) {
  Trainer straight(small_run("straight"), test_support::quiet_trainer());
  straight.fit();
  const auto expected = model_state(straight);

  const auto config = small_run("resumed");
  const auto stopped = fit_stopping_after(config, 4);
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.steps, 4);
  EXPECT_TRUE(fs::exists(stopped.last_checkpoint));
  EXPECT_TRUE(stopped.weights_path.empty());
  Trainer second(config, test_support::quiet_trainer());
  const auto resumed = second.fit();
  EXPECT_EQ(resumed.start_step, 4);
  EXPECT_EQ(resumed.steps, 12);
  expect_bit_identical(model_state(second), expected);
}

// A run that died after its checkpoint of an epoch's last step, before the epoch's end (killed,
// a node lost; checkpoint.every_steps): the resume ends that epoch at once, and its steps' losses,
// which no checkpoint keeps, are not shown as a training loss of 0.
TEST(Trainer, AnEpochWhoseStepsAllRanBeforeTheResumeShowsNoTrainingLoss) {
  auto config = small_run("resumed-at-epoch-end", {"checkpoint.every_steps=6", "logging.progress=lines"});
  auto dying = test_support::quiet_trainer();
  dying.after_step = [](std::int64_t step) {
    if (step == 6) throw std::runtime_error("killed");  // after the first epoch's last step and its checkpoint
  };
  EXPECT_THROW(Trainer(config, dying).fit(), std::runtime_error);
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  EXPECT_EQ(Trainer(config, options).fit().start_step, 6);
  EXPECT_NE(console.str().find("epoch 1/2 done in 0:00: its steps ran before the resume, val loss "), std::string::npos) << console.str();
  const auto epochs = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "epoch");
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_FALSE(epochs[0].contains("train_loss")) << epochs[0];
  EXPECT_TRUE(epochs[1]["train_loss"].is_number()) << epochs[1];
}

// Two trainers set up side by side, then fit one after the other (as a sweep or a test does): the
// second draws its dropout masks as though it ran alone, not from where the first left the RNG.
TEST(Trainer, AFitDrawsFromItsOwnSetUpNotFromAnotherTrainersDraws) {
  Trainer alone(small_run("rng-alone"), test_support::quiet_trainer());
  alone.fit();
  Trainer first(small_run("rng-first"), test_support::quiet_trainer());
  Trainer second(small_run("rng-second"), test_support::quiet_trainer());
  first.fit();
  second.fit();
  expect_bit_identical(model_state(second), model_state(alone));
}

// scheduler: plateau's decays and count are in the checkpoint: a run stopped after one and resumed
// trains at the rate the uninterrupted run does. best.pt kept by the highest val_loss makes each
// epoch whose val loss falls one "without improvement", so patience 0 decays after epoch 2.
TEST(Trainer, APlateauDecayIsKeptAcrossAResume) {
  const std::vector<std::string> plateau{"scheduler.name=plateau",   "scheduler.patience=0", "scheduler.gamma=0.5",
                                         "checkpoint.best_mode=max", "optimizer.lr=0.002",   "train.epochs=4",
                                         "logging.every_steps=1"};
  Trainer straight(small_run("plateau-straight", plateau), test_support::quiet_trainer());
  const auto done = straight.fit();
  const auto expected = model_state(straight);
  const auto steps = test_support::jsonl_records(fs::path(done.run_dir) / "metrics.jsonl", "step");
  ASSERT_EQ(steps.size(), 24U);
  EXPECT_EQ(steps.front()["lr"].get<double>(), 0.002);
  EXPECT_LT(steps.back()["lr"].get<double>(), 0.002) << "no decay: the test would not see a lost one";
  // The step records name each epoch's rate: epoch 3's (steps 13-18) is after epoch 2's decision.
  const double epoch3_lr = steps[12]["lr"].get<double>();

  const auto config = small_run("plateau-resumed", plateau);
  EXPECT_TRUE(fit_stopping_after(config, 15).interrupted);
  Trainer second(config, test_support::quiet_trainer());
  EXPECT_EQ(second.fit().start_step, 15);
  expect_bit_identical(model_state(second), expected);
  const auto resumed_steps = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "step");
  ASSERT_FALSE(resumed_steps.empty());
  EXPECT_EQ(resumed_steps.back()["step"], 24);
  EXPECT_EQ(resumed_steps.back()["lr"].get<double>(), steps.back()["lr"].get<double>());
  EXPECT_LE(steps.back()["lr"].get<double>(), epoch3_lr);
}

TEST(Trainer, KeepsOnlyTheLastCheckpoints) {
  const auto config = small_run("keep-last", {"checkpoint.every_steps=1", "checkpoint.keep_last=2"});
  Trainer trainer(config, test_support::quiet_trainer());
  trainer.fit();
  const CheckpointStore store(config.checkpoint_dir(), 2);
  const auto kept = store.periodic();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NE(kept[0].find("step-00000011.pt"), std::string::npos);
  EXPECT_NE(kept[1].find("step-00000012.pt"), std::string::npos);
}

TEST(Trainer, ResumeNeverStartsOver) {
  Trainer(small_run("resume-never", {"train.max_steps=3"}), test_support::quiet_trainer()).fit();
  Trainer trainer(small_run("resume-never", {"train.max_steps=3", "checkpoint.resume=never"}, /*fresh=*/false),
                  test_support::quiet_trainer());
  EXPECT_EQ(trainer.fit().start_step, 0);
}

// Started again, a run with no steps left says why: finished, or resumed past a lowered max_steps.
TEST(Trainer, NothingLeftToTrainSaysWhy) {
  Trainer(small_run("nothing-left", {"train.max_steps=3"}), test_support::quiet_trainer()).fit();
  for (const std::string steps : {"3", "2"}) {
    const auto [result, console] =
        test_support::fit_capturing_console(small_run("nothing-left", {"train.max_steps=" + steps}, /*fresh=*/false));
    EXPECT_EQ(result.start_step, 3);
    const std::string why = steps == "3" ? "this run already finished its 3 steps" : "the checkpoint is at step 3, past this run's 2 steps";
    EXPECT_NE(console.find("nothing left to train: " + why), std::string::npos) << console;
  }
}

TEST(Trainer, AMissingCheckpointToResumeFromNamesTheOnesThatExist) {
  const auto first = small_run("resume-missing", {"train.max_steps=3", "checkpoint.every_steps=1", "checkpoint.keep_last=2"});
  Trainer(first, test_support::quiet_trainer()).fit();
  const auto missing = first.checkpoint_dir() + "/step-00000009.pt";
  try {
    Trainer(small_run("resume-missing", {"checkpoint.resume=" + missing}, /*fresh=*/false), test_support::quiet_trainer());
    ADD_FAILURE() << "resumed from a file that does not exist";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + missing + "' does not exist; " + first.checkpoint_dir() +
                                         " has step-00000002.pt, step-00000003.pt"),
              std::string::npos)
        << e.what();
  }
}

// Two runs in one folder would interleave their metrics and rotate away each other's checkpoints.
TEST(Trainer, ASecondRunInTheSameFolderIsRefusedWhileTheFirstLives) {
  const auto config = small_run("two-in-one-folder", {"train.max_steps=2"});
  std::optional<Trainer> first(std::in_place, config, test_support::quiet_trainer());
  try {
    Trainer(small_run("two-in-one-folder", {"train.max_steps=2"}, /*fresh=*/false), test_support::quiet_trainer());
    ADD_FAILURE() << "a second trainer was given the same logging.dir";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is writing to '" + config.logging.dir + "' (logging.dir)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(first->fit().steps, 2) << "the first run is unharmed";
  first.reset();
  EXPECT_NO_THROW(Trainer(small_run("two-in-one-folder", {"train.max_steps=4"}, /*fresh=*/false), test_support::quiet_trainer()).fit())
      << "the folder is free once the first run is gone";
}

// Checkpoints cleaned away to keep a finished run's weights alone: the same command starts over,
// and says first that it will write over those weights, while they can still be kept.
TEST(Trainer, AFolderWhoseCheckpointsWereCleanedSaysItsWeightsWillBeWrittenOver) {
  const auto first = small_run("cleaned-checkpoints", {"train.epochs=1"});
  Trainer(first, test_support::quiet_trainer()).fit();
  const fs::path dir = first.logging.dir;
  const std::string warning = "model.safetensors holds an earlier run's weights (written ";
  EXPECT_EQ(lines_containing(dir / "training.log", warning), 0) << "said by a run in a fresh folder";
  fs::remove_all(dir / "checkpoints");
  const auto again = Trainer(small_run("cleaned-checkpoints", {"train.epochs=1"}, false), test_support::quiet_trainer()).fit();
  EXPECT_EQ(again.start_step, 0);
  EXPECT_EQ(lines_containing(dir / "training.log", warning), 1);
  EXPECT_EQ(lines_containing(dir / "training.log", "holds no checkpoint to resume from: this run starts over"), 1);
  // A finished run with its checkpoints resumes at its end: nothing is written over, nothing said.
  Trainer(small_run("cleaned-checkpoints", {"train.epochs=1"}, false), test_support::quiet_trainer()).fit();
  EXPECT_EQ(lines_containing(dir / "training.log", warning), 1);
}

// A run that starts over (resume: never) in a folder of an earlier run's checkpoints, or goes on
// from an earlier step of its own, moves the checkpoints past its start aside: left among its own,
// the next resume went on from the newest of either (the earlier run's step 12, here).
TEST(Trainer, StartingOverOrGoingBackMovesTheCheckpointsPastTheStartAside) {
  const auto first = small_run("start-over", {"train.epochs=2"});
  Trainer(first, test_support::quiet_trainer()).fit();
  const fs::path checkpoints = fs::path(first.logging.dir) / "checkpoints";
  const auto again = small_run("start-over", {"train.epochs=1", "checkpoint.resume=never"}, false);
  EXPECT_EQ(Trainer(again, test_support::quiet_trainer()).fit().start_step, 0);
  EXPECT_FALSE(fs::exists(checkpoints / "step-00000012.pt")) << "the earlier run's newest, which the next resume would take";
  std::vector<fs::path> aside;
  for (const auto& entry : fs::directory_iterator(checkpoints))
    if (entry.is_directory()) aside.push_back(entry.path());
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(aside.front().filename().string().rfind("earlier-", 0), 0u) << aside.front();
  for (const char* name : {"step-00000006.pt", "step-00000012.pt", "best.pt"}) EXPECT_TRUE(fs::exists(aside.front() / name)) << name;
  EXPECT_EQ(lines_containing(fs::path(first.logging.dir) / "training.log", "the checkpoints an earlier run left in"), 1);
  // The next resume goes on from this run's own step 6.
  EXPECT_EQ(Trainer(small_run("start-over", {"train.epochs=2"}, false), test_support::quiet_trainer()).fit().start_step, 6);
  // Going back to step 6 of its own moves step 12 aside.
  const auto back = small_run("start-over", {"train.epochs=2", "checkpoint.resume=" + (checkpoints / "step-00000006.pt").string()}, false);
  EXPECT_EQ(Trainer(back, test_support::quiet_trainer()).fit().start_step, 6);
  EXPECT_EQ(lines_containing(fs::path(first.logging.dir) / "training.log", "the checkpoints past that step in"), 1);
  // One set is kept: a config with `never` run again and again would fill the disk.
  std::vector<fs::path> kept;
  for (const auto& entry : fs::directory_iterator(checkpoints))
    if (entry.is_directory()) kept.push_back(entry.path());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(fs::exists(kept.front() / "step-00000012.pt")) << "the steps past 6 of the run gone back on";
  EXPECT_EQ(lines_containing(fs::path(first.logging.dir) / "training.log", "is deleted: one is kept"), 1);
}
