// Where a run may write, checked before it writes (train/setup/run_folder_checks.hpp): a folder
// holding files a run writes that no run wrote (`logging.dir: .` beside one's own config.yaml
// wrote the expanded config over it), a run folder inside an image folder's classes, and a run
// folder's own config.yaml trained on after the folder moved.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gputrain/core/error.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
namespace fs = std::filesystem;

namespace {

std::string contents(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(RunFolder, AFolderHoldingFilesARunWritesIsRefusedAndLeftAsItWas) {
  const auto config = test_support::small_run("foreign-files", {"train.epochs=1"});
  const fs::path dir = config.logging.dir;
  fs::create_directories(dir);
  std::ofstream(dir / "config.yaml") << "# my own config, with its comments\n";
  std::ofstream(dir / "model.safetensors") << "weights from elsewhere";
  try {
    train::Trainer trainer(config, test_support::quiet_trainer());
    FAIL() << "a folder holding another's config.yaml and model.safetensors was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds config.yaml, model.safetensors, which no gputrain run wrote there"), std::string::npos)
        << e.what();
    EXPECT_NE(e.remedy().find("give the run a folder of its own"), std::string::npos) << e.remedy();
  }
  EXPECT_EQ(contents(dir / "config.yaml"), "# my own config, with its comments\n");
  EXPECT_EQ(contents(dir / "model.safetensors"), "weights from elsewhere");
  EXPECT_FALSE(fs::exists(dir / "metrics.jsonl"));
}

// A checkpoint.dir of its own (a models folder) holding another's best.pt: save_best would replace it.
TEST(RunFolder, ACheckpointFolderHoldingAnothersBestIsRefused) {
  const auto models = fs::temp_directory_path() / "gputrain-run-folder-models";
  fs::remove_all(models);
  fs::create_directories(models);
  std::ofstream(models / "best.pt") << "another tool's model";
  const auto config = test_support::small_run("foreign-best", {"train.epochs=1", "checkpoint.dir=" + models.string()});
  try {
    train::Trainer trainer(config, test_support::quiet_trainer());
    FAIL() << "a checkpoint.dir holding another's best.pt was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint.dir '" + models.string() + "' holds best.pt, which no gputrain run wrote there"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(contents(models / "best.pt"), "another tool's model");
}

TEST(RunFolder, ARunsOwnFolderIsTakenAgain) {
  const auto config = test_support::small_run("own-files", {"train.epochs=1"});
  train::Trainer(config, test_support::quiet_trainer()).fit();
  ASSERT_TRUE(fs::exists(fs::path(config.logging.dir) / "config.yaml"));
  // The same folder again (a resume, or the next run of the same config): its lock file marks it.
  const auto again = test_support::small_run("own-files", {"train.epochs=2"}, false);
  EXPECT_EQ(train::Trainer(again, test_support::quiet_trainer()).fit().total_steps, 12);
  // Copied without its dot-files (or written before the lock): its checkpoints mark it.
  fs::remove(fs::path(config.logging.dir) / ".gputrain.lock");
  const auto third = test_support::small_run("own-files", {"train.epochs=3"}, false);
  EXPECT_EQ(train::Trainer(third, test_support::quiet_trainer()).fit().total_steps, 18);
}

TEST(RunFolder, ARunFolderInsideAnImageFolderIsRefusedBeforeItIsMade) {
  const auto images = fs::temp_directory_path() / "gputrain-run-folder-images";
  fs::remove_all(images);
  for (const std::string name : {"cat", "dog"}) {
    fs::create_directories(images / name);
    for (int i = 0; i < 4; ++i)
      fs::copy_file(test_support::format_fixture("images/checker.png"), images / name / (std::to_string(i) + ".png"));
  }
  const auto run = images / "runs" / "a";
  const auto config = test_support::small_run("images", {"data.source=image_folder", "data.path=" + images.string(), "data.shape=[3, 8, 8]",
                                                         "data.image_size=8", "data.val_fraction=0.25", "logging.dir=" + run.string()});
  try {
    train::Trainer trainer(config, test_support::quiet_trainer());
    FAIL() << "a logging.dir inside the image folder was taken";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "logging.dir '" + run.string() + "' is inside data.path '" + images.string() +
                  "', an image folder whose sub-folders are its classes: the next run would read the run's folder as a class");
    EXPECT_EQ(e.remedy(), "put the run outside the images: --set logging.dir=runs/NAME");
  }
  EXPECT_FALSE(fs::exists(images / "runs"));
}

// `mv runs/a runs/b; gputrain train runs/b/config.yaml`: its logging.dir still names runs/a, where
// a new run would have started, away from the checkpoints in runs/b.
TEST(RunFolder, ARunsConfigTrainedAfterItsFolderMovedIsRefusedWithTheSettingThatGoesOn) {
  const auto first = test_support::small_run("moved-from", {"train.epochs=1"});
  train::Trainer(first, test_support::quiet_trainer()).fit();
  const fs::path was = first.logging.dir, moved = fs::temp_directory_path() / "gputrain-trainer-moved-to";
  fs::remove_all(moved);
  fs::rename(was, moved);
  const auto saved = (moved / "config.yaml").string();
  try {
    train::Trainer trainer(train::load_config({{saved}, {"train.epochs=2"}, ""}), test_support::quiet_trainer());
    FAIL() << "a moved run's config.yaml trained in its old folder";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(saved + ":"), std::string::npos) << "the line that sets logging.dir: " << e.what();
    EXPECT_NE(std::string(e.what()).find("logging.dir '" + was.string() + "' is not the run folder this config.yaml was saved in, '" +
                                         moved.string() + "' (the folder was moved or copied since): training would start a new run"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.remedy().find("to go on with this run where it is: --set logging.dir=" + moved.string()), std::string::npos) << e.remedy();
  }
  EXPECT_FALSE(fs::exists(was)) << "made before the refusal";
  // The fix it gives goes on with the run where it is now.
  const auto result =
      train::Trainer(train::load_config({{saved}, {"train.epochs=2", "logging.dir=" + moved.string()}, ""}), test_support::quiet_trainer())
          .fit();
  EXPECT_EQ(result.start_step, 6);
  EXPECT_EQ(result.steps, 12);
}

// The run's config.yaml given from another folder than the run started in: its relative
// logging.dir names a folder under this one. The fix names the folder to run from.
TEST(RunFolder, ARunsConfigWithARelativeFolderGivenFromElsewhereNamesTheFolderToRunFrom) {
  const fs::path started_in = fs::temp_directory_path() / "gputrain-trainer-started-here";
  const std::string relative = "runs/gputrain-test-relative-run-" + std::to_string(::getpid());  // under the tests' folder
  fs::remove_all(started_in);
  const auto run = started_in / relative;
  fs::create_directories(run / "checkpoints");
  std::ofstream(run / "checkpoints" / "step-00000006.pt") << "a checkpoint";
  std::ofstream(run / "config.yaml") << train::to_yaml(test_support::small_run("relative-run", {"logging.dir=" + relative}));
  try {
    train::Trainer trainer(train::load_config({{(run / "config.yaml").string()}, {}, ""}), test_support::quiet_trainer());
    FAIL() << "a run's config.yaml given from elsewhere trained in a folder under this one";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("(gputrain runs from another folder than the run did, " + started_in.string() + ")"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.remedy().find("run gputrain from " + started_in.string() + ", where the run started"), std::string::npos) << e.remedy();
  }
  EXPECT_FALSE(fs::exists(relative)) << "made before the refusal";
  fs::remove_all(relative);
}

// A checkpoint.dir set inside the run folder moved with it: the fix moves it along.
TEST(RunFolder, AMovedRunsCheckpointFolderInsideItMovesAlongInTheFix) {
  const auto first = test_support::small_run(
      "moved-ckpt-from",
      {"train.epochs=1", "checkpoint.dir=" + (fs::temp_directory_path() / "gputrain-trainer-moved-ckpt-from" / "ckpts").string()});
  train::Trainer(first, test_support::quiet_trainer()).fit();
  const fs::path moved = fs::temp_directory_path() / "gputrain-trainer-moved-ckpt-to";
  fs::remove_all(moved);
  fs::rename(first.logging.dir, moved);
  try {
    train::Trainer trainer(train::load_config({{(moved / "config.yaml").string()}, {}, ""}), test_support::quiet_trainer());
    FAIL() << "a moved run's config.yaml trained in its old folder";
  } catch (const UsageError& e) {
    EXPECT_NE(e.remedy().find("--set logging.dir=" + moved.string() + " --set checkpoint.dir=" + (moved / "ckpts").string() + ";"),
              std::string::npos)
        << e.remedy();
  }
}

// A project's own config.yaml beside another tool's checkpoints/ is no run's saved config: it
// trains where its logging.dir says. A run's, copied without its lock (cp -r a/* b/), is one.
TEST(RunFolder, AProjectsOwnConfigBesideCheckpointsTrainsWhereItSays) {
  const auto project = fs::temp_directory_path() / "gputrain-trainer-project";
  fs::remove_all(project);
  fs::create_directories(project / "checkpoints");
  std::ofstream(project / "checkpoints" / "epoch=3.pt") << "another tool's checkpoint";
  const auto run = fs::temp_directory_path() / "gputrain-trainer-project-run";
  fs::remove_all(run);
  std::ofstream(project / "config.yaml") << "model: {name: mlp, hidden: [8]}\ndata: {shape: [4], classes: 2, samples: 32, val_samples: 8}\n"
                                         << "train: {epochs: 1, batch_size: 16}\ndevice: cpu\nlogging: {dir: " << run.string()
                                         << ", progress: off}\n";
  EXPECT_EQ(train::Trainer(train::load_config({{(project / "config.yaml").string()}, {}, ""}), test_support::quiet_trainer()).fit().steps,
            2);
  // The run's saved config.yaml, copied with its checkpoints but not its lock: still the run's.
  const auto copy = fs::temp_directory_path() / "gputrain-trainer-project-copy";
  fs::remove_all(copy);
  fs::create_directories(copy / "checkpoints");
  fs::copy(run / "config.yaml", copy / "config.yaml");
  fs::copy(run / "checkpoints", copy / "checkpoints", fs::copy_options::recursive);
  EXPECT_THROW(train::Trainer(train::load_config({{(copy / "config.yaml").string()}, {}, ""}), test_support::quiet_trainer()), UsageError);
}
