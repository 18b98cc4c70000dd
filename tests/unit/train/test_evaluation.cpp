// Trainer::evaluate (`gputrain train --evaluate`): a trained model's weights measured on the
// validation data by the pass that validates each epoch, with nothing trained or written; and
// the lines and JSON it is reported as.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "../../support/quiet_trainer.hpp"
#include "../../support/scratch_folder.hpp"
#include "../../support/small_run.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/train/evaluation.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/test_paths.hpp"
#include "train/models/state_dict_file.hpp"

using namespace gputrain;
using namespace gputrain::train;
using test_support::small_run;
namespace fs = std::filesystem;

namespace {

TrainerOptions evaluating() {
  auto options = test_support::quiet_trainer();
  options.evaluate_only = true;
  return options;
}

void expect_same_figures(const EpochMetrics& evaluated, const EpochMetrics& validated) {
  ASSERT_TRUE(evaluated.val_loss && validated.val_loss);
  EXPECT_NEAR(*evaluated.val_loss, *validated.val_loss, 1e-9);
  EXPECT_EQ(evaluated.val_accuracy, validated.val_accuracy);
  EXPECT_EQ(evaluated.val_balanced_accuracy, validated.val_balanced_accuracy);
  EXPECT_EQ(evaluated.val_class_samples, validated.val_class_samples);
  EXPECT_EQ(evaluated.val_class_right, validated.val_class_right);
  EXPECT_EQ(evaluated.val_class_predicted, validated.val_class_predicted);
}

// A CSV of `rows` rows: two features and a label named by `labels` (cycled), offset to vary the values.
std::string write_csv(const fs::path& folder, const std::string& name, int rows, int offset,
                      const std::vector<std::string>& labels = {"0", "1"}) {
  std::ofstream out(folder / name);
  out << "a,b,label\n";
  for (int i = 0; i < rows; ++i)
    out << (i + offset) % 17 << "," << (i * 7 + offset) % 5 << "," << labels[static_cast<std::size_t>(i) % labels.size()] << "\n";
  return (folder / name).string();
}

}  // namespace

// The figures of an evaluation are those the run measured on the same weights and data: best.pt
// (epoch 1's, with best_mode max on val_loss) gives epoch 1's, model.safetensors the last epoch's.
TEST(Evaluate, GivesTheFiguresTheRunMeasuredOnTheSameWeights) {
  std::vector<std::string> settings{"train.epochs=2", "checkpoint.best_mode=max"};
  Trainer trainer(small_run("evaluate", settings), test_support::quiet_trainer());
  const auto run = trainer.fit();
  ASSERT_TRUE(run.last_epoch);
  const auto config = small_run("evaluate", settings, /*fresh=*/false);
  std::ifstream jsonl(fs::path(config.logging.dir) / "metrics.jsonl");
  std::vector<nlohmann::json> epochs;
  for (std::string line; std::getline(jsonl, line);)
    if (auto record = nlohmann::json::parse(line); record["kind"] == "epoch") epochs.push_back(record);
  ASSERT_EQ(epochs.size(), 2u);
  const auto best_epoch = epochs[0]["val_loss"] > epochs[1]["val_loss"] ? 0u : 1u;

  Trainer evaluator(config, evaluating());
  const auto last = evaluator.evaluate(run.weights_path);
  EXPECT_FALSE(last.from_checkpoint);
  EXPECT_EQ(last.samples, 32);
  EXPECT_EQ(last.device, "cpu");
  expect_same_figures(last.metrics, *run.last_epoch);

  const auto best = evaluator.evaluate(config.checkpoint_dir() + "/best.pt");
  EXPECT_TRUE(best.from_checkpoint);
  EXPECT_EQ(best.checkpoint_epochs_done, best_epoch + 1);
  EXPECT_EQ(best.checkpoint_step, 6 * (best_epoch + 1));
  EXPECT_FALSE(best.checkpoint_inside_epoch);
  EXPECT_NEAR(*best.metrics.val_loss, epochs[best_epoch]["val_loss"].get<double>(), 1e-9);
  EXPECT_EQ(*best.metrics.val_accuracy, epochs[best_epoch]["val_accuracy"].get<double>());
}

TEST(Evaluate, WritesNothingAndNeedsNoRunFolder) {
  auto trained = small_run("evaluate-source", {"train.epochs=1"});
  Trainer trainer(trained, test_support::quiet_trainer());
  const auto weights = trainer.fit().weights_path;

  test_support::ScratchFolder scratch("evaluate-writes-nothing");
  const auto elsewhere = scratch.path / "never-made";
  auto config = trained;
  config.logging.dir = elsewhere.string();
  Trainer evaluator(config, evaluating());
  const auto result = evaluator.evaluate(weights);
  EXPECT_TRUE(result.metrics.val_accuracy.has_value());
  EXPECT_FALSE(fs::exists(elsewhere)) << "an evaluation creates no run folder";
  EXPECT_THROW(evaluator.fit(), std::logic_error) << "a trainer set up to evaluate has no training steps planned";
  // The training run's folder is as the run left it: no config.yaml, log line or checkpoint added.
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(trained.logging.dir)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  Trainer again(config, evaluating());
  again.evaluate(weights);
  std::vector<std::string> after;
  for (const auto& entry : fs::recursive_directory_iterator(trained.logging.dir)) after.push_back(entry.path().filename().string());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(after, files);

  // batch_size auto sizes no training step (no probes, no auto_batch.json): batches of 256.
  config.train.batch_size.reset();
  config.logging.progress = "lines";  // the notes on the console
  std::ostringstream console;
  auto options = evaluating();
  options.console = &console;
  Trainer automatic(config, options);
  EXPECT_EQ(automatic.evaluate(weights).metrics.val_accuracy, result.metrics.val_accuracy);
  EXPECT_NE(console.str().find("batch_size auto: evaluating in batches of 256"), std::string::npos) << console.str();
  // Only the 32 validation samples are streamed: the 96 training samples give names and figures.
  EXPECT_NE(console.str().find("data: 32 samples streamed by"), std::string::npos) << console.str();
  EXPECT_FALSE(fs::exists(elsewhere));
}

TEST(Evaluate, RefusesAConfigWithoutValidationData) {
  try {
    Trainer evaluator(small_run("evaluate-no-val", {"data.val_samples=0"}), evaluating());
    FAIL() << "an evaluation without validation data has nothing to measure";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--evaluate measures the weights on the config's validation data, and it has none"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.remedy(), "set data.val_samples above 0");
  }
}

TEST(Evaluate, RefusesAMissingFileAFolderAConfigAndAnotherModelsWeightsWithExitCode2) {
  Trainer trainer(small_run("evaluate-other", {"train.epochs=1"}), test_support::quiet_trainer());
  const auto weights = trainer.fit().weights_path;
  Trainer wider(small_run("evaluate-wider", {"model.hidden=[64, 16]"}), evaluating());
  const auto refusal = [&](const std::string& path) {
    try {
      wider.evaluate(path);
    } catch (const UsageError& e) {
      EXPECT_EQ(e.exit_code(), ExitCode::usage);
      return std::string(e.what()) + "\n  fix: " + e.remedy();
    }
    ADD_FAILURE() << path << " was evaluated";
    return std::string();
  };
  EXPECT_NE(refusal(weights).find("has shape [32, 10] in '" + weights + "'"), std::string::npos) << refusal(weights);
  EXPECT_NE(refusal(weights).find("fix: evaluate with the config the weights were trained with"), std::string::npos);
  EXPECT_NE(refusal("no-such-weights.pt").find("'no-such-weights.pt' does not exist"), std::string::npos);
  // A folder: the weights in it are the fix, a run folder's model.safetensors or a checkpoint folder's newest.
  const auto run = fs::path(weights).parent_path();
  EXPECT_NE(refusal(run.string()).find("is a folder, not a weights file\n  fix: give the weights in it: --evaluate " + weights),
            std::string::npos)
      << refusal(run.string());
  EXPECT_NE(refusal((run / "checkpoints").string()).find("fix: give the weights in it: --evaluate " + (run / "checkpoints").string() + "/"),
            std::string::npos)
      << refusal((run / "checkpoints").string());
  EXPECT_NE(refusal("/dev/null").find("'/dev/null' is no regular file (a pipe or a device), not a weights file"), std::string::npos);
  // The run's config given in the weights' place: named as holding no weights, with what to give.
  const auto config = (fs::path(weights).parent_path() / "config.yaml").string();
  EXPECT_NE(refusal(config).find("'" + config + "' holds no weights: it is neither a checkpoint"), std::string::npos) << refusal(config);
  EXPECT_NE(refusal(config).find("fix: give a checkpoint"), std::string::npos) << refusal(config);
}

// A Python model's state_dict (torch.save, DDP's "module." prefix on its names) is evaluated as it
// is: the model holds the file's weights, and the figures are theirs.
TEST(Evaluate, TakesAStateDictTorchSaveWrote) {
  const auto file = std::string(gputrain::test_support::format_fixtures_dir()) + "/checkpoints/mlp_state_dict.pth";
  Trainer trainer(
      small_run("evaluate-state-dict", {"model.name=mlp", "model.hidden=[4]", "model.dropout=0", "data.shape=[3]", "data.classes=2"}),
      evaluating());
  const auto result = trainer.evaluate(file);
  EXPECT_FALSE(result.from_checkpoint);
  ASSERT_TRUE(result.metrics.val_loss.has_value());
  const auto saved = read_torch_save_state(file, "--evaluate");
  ASSERT_EQ(saved.size(), 4U);
  for (const auto& [name, tensor] : trainer.model().named_state()) {
    const auto it = std::find_if(saved.begin(), saved.end(), [&](const auto& s) { return s.first == "module." + name; });
    ASSERT_NE(it, saved.end()) << name;
    EXPECT_TRUE(at::equal(tensor.cpu(), it->second)) << name;
  }
}

// A run that held data.val_fraction out, evaluated on a test file: the training samples stay
// those the run had, so data.standardize measures the same mean and std (and the class weights
// the same counts); a training run still refuses the two together.
TEST(Evaluate, OnValPathKeepsTheRunsHeldOutTrainingSamples) {
  test_support::ScratchFolder scratch("evaluate-val-path");
  const auto train_file = write_csv(scratch.path, "train.csv", 60, 0), test_file = write_csv(scratch.path, "test.csv", 20, 3);
  auto as_trained = small_run("evaluate-val-path", {"data.source=csv", "data.path=" + train_file, "data.labels=label",
                                                    "data.val_fraction=0.2", "data.standardize=true", "data.classes=auto"});
  auto trained = as_trained;
  const auto run_data = open_data(trained);
  ASSERT_EQ(run_data.sources.train->size(), 48);

  auto on_test = as_trained;
  on_test.data.val_path = test_file;
  auto evaluated = on_test;
  const auto test_data = open_data(evaluated, /*evaluating=*/true);
  EXPECT_EQ(test_data.sources.train->size(), 48);
  EXPECT_EQ(test_data.sources.val->size(), 20);
  EXPECT_EQ(evaluated.data.mean, trained.data.mean) << "standardised as the run was";
  EXPECT_EQ(evaluated.data.std, trained.data.std);
  EXPECT_THROW(open_data(on_test), UsageError) << "a training run takes one source of validation data";
}

TEST(EvaluationReport, SaysWhatWasEvaluatedOnWhatTheFiguresAndEachClass) {
  EvaluationResult r;
  r.weights = "runs/churn/checkpoints/best.pt";
  r.from_checkpoint = true;
  r.checkpoint_step = 320;
  r.checkpoint_epochs_done = 4;
  r.data = "CSV test.csv (200 samples)";
  r.samples = 200;
  r.device = "cpu";
  r.seconds = 0.25;
  r.metrics.val_loss = 0.41234;
  r.metrics.val_accuracy = 0.875;
  r.metrics.val_balanced_accuracy = 0.7;
  r.metrics.val_class_samples = {20, 180};
  r.metrics.val_class_right = {10, 165};
  r.metrics.val_class_predicted = {25, 175};
  r.class_names = {"churn", "stay"};
  EXPECT_EQ(evaluation_lines(r),
            (std::vector<std::string>{"weights: runs/churn/checkpoints/best.pt (a checkpoint at step 320, after epoch 4)",
                                      "evaluated on CSV test.csv (200 samples), on cpu in 0.25 s",
                                      "val loss 0.4123, accuracy 87.50%, balanced accuracy 70.00%",
                                      "per class: 'churn' 10 of 20 found (recall 50.0 %), 10 of 25 predictions right (precision 40.0 %); "
                                      "'stay' 165 of 180 found (recall 91.7 %), 165 of 175 predictions right (precision 94.3 %)"}));
  r.checkpoint_inside_epoch = true;
  EXPECT_EQ(evaluation_lines(r)[0], "weights: runs/churn/checkpoints/best.pt (a checkpoint at step 320, inside epoch 5)");

  r.metrics.val_class_predicted = {0, 200};
  r.metrics.val_class_right = {0, 180};
  const auto json = nlohmann::json::parse(evaluation_json(r));
  EXPECT_EQ(json["weights"], r.weights);
  EXPECT_EQ(json["checkpoint_step"], 320);
  EXPECT_EQ(json["checkpoint_epochs_done"], 4);
  EXPECT_EQ(json["samples"], 200);
  EXPECT_EQ(json["val_accuracy"], 0.875);
  EXPECT_FALSE(json.contains("val_mse"));
  ASSERT_EQ(json["classes"].size(), 2u);
  EXPECT_EQ(json["classes"][0]["name"], "churn");
  EXPECT_EQ(json["classes"][0]["recall"], 0.0);
  EXPECT_TRUE(json["classes"][0]["precision"].is_null()) << "never predicted: no precision to give";
  EXPECT_EQ(json["classes"][1]["precision"], 0.9);

  EvaluationResult regression;
  regression.weights = "model.safetensors";
  regression.metrics.val_loss = 0.5;
  regression.metrics.val_mse = 2.25;
  regression.metrics.val_mae = 1.2;
  EXPECT_EQ(evaluation_lines(regression)[2], "val loss 0.5000, mse 2.2500, mae 1.2000");
  const auto regression_json = nlohmann::json::parse(evaluation_json(regression));
  EXPECT_TRUE(regression_json["checkpoint_step"].is_null());
  EXPECT_EQ(regression_json["val_mae"], 1.2);
  EXPECT_FALSE(regression_json.contains("classes"));
}

// model.safetensors records the class names and the standardisation figures its run used: a
// config whose training data gives others (another data.path) is refused, since its figures
// would look plausible and be wrong.
TEST(Evaluate, RefusesWeightsWhoseClassesOrStandardisationTheDataDoesNotGive) {
  test_support::ScratchFolder scratch("evaluate-mismatch");
  const auto trained_on = write_csv(scratch.path, "train.csv", 60, 0, {"no", "yes"});
  auto config = small_run("evaluate-mismatch", {"data.source=csv", "data.path=" + trained_on, "data.labels=label", "data.classes=auto",
                                                "data.val_fraction=0.2", "data.standardize=true", "train.epochs=1"});
  Trainer trainer(config, test_support::quiet_trainer());
  const auto weights = trainer.fit().weights_path;
  const auto refusal = [&](const std::string& data_path) {
    auto other = config;
    other.data.path = data_path;
    try {
      Trainer(other, evaluating()).evaluate(weights);
    } catch (const UsageError& e) {
      return std::string(e.what()) + "\n  fix: " + e.remedy();
    }
    return std::string("evaluated");
  };
  EXPECT_EQ(refusal(trained_on), "evaluated") << "the run's own config";
  const auto shifted = refusal(write_csv(scratch.path, "shifted.csv", 60, 5, {"no", "yes"}));
  EXPECT_NE(shifted.find("was trained on inputs standardised by mean ["), std::string::npos) << shifted;
  EXPECT_NE(shifted.find("fix: evaluate with the run's config.yaml unchanged but for data.val_path"), std::string::npos) << shifted;
  const auto renamed = refusal(write_csv(scratch.path, "renamed.csv", 60, 0, {"false", "true"}));
  EXPECT_NE(renamed.find("was trained on the classes [no, yes], and this config's data has [false, true]"), std::string::npos) << renamed;
}

// Labels past the trained classes in the evaluation data made a head of another size, reported as a
// tensor's shape with "evaluate with the config the weights were trained with", which the user had
// done; it is named as the classes (or targets) the data needs and the weights do not give.
TEST(Evaluate, DataOfOtherClassesOrAnotherTaskIsNamedAsSuch) {
  test_support::ScratchFolder scratch("evaluate-classes");
  const auto trained_on = write_csv(scratch.path, "train.csv", 40, 0);
  auto config = small_run("evaluate-classes",
                          {"data.source=csv", "data.path=" + trained_on, "data.labels=label", "data.classes=auto", "train.epochs=1"});
  const auto weights = Trainer(config, test_support::quiet_trainer()).fit().weights_path;
  const auto refusal = [&](const std::vector<std::string>& labels, const std::string& task) {
    auto other = config;
    other.data.val_path = write_csv(scratch.path, "val.csv", 20, 3, labels);
    other.data.task = task;
    try {
      Trainer(other, evaluating()).evaluate(weights);
    } catch (const UsageError& e) {
      return std::string(e.what()) + "\n  fix: " + e.remedy();
    }
    return std::string("evaluated");
  };
  EXPECT_EQ(refusal({"0", "1"}, "classification"), "evaluated");
  const auto unseen = refusal({"0", "5"}, "classification");
  EXPECT_NE(unseen.find("' gives 2 outputs (its head "), std::string::npos) << unseen;
  EXPECT_NE(unseen.find("and this config's data needs 6 classes (by its labels: ids 0 to 5)\n  fix: evaluate on data labelled with the "
                        "classes the model was trained on (ids 0 to 1)"),
            std::string::npos)
      << unseen;
  const auto regression = refusal({"0", "1"}, "regression");
  EXPECT_NE(regression.find("and this config's data needs 1 regression target\n  fix: set data.task and data.labels"), std::string::npos)
      << regression;
}
