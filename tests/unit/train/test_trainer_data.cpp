// The trainer over each way data reaches it: streamed by the threaded loader, cached in memory,
// read from files (arrays and an image folder with a corrupt image).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using gputrain::test_support::format_fixture;
using namespace gputrain::train;
namespace fs = std::filesystem;

namespace {

// The trainer tests' small run, in run directories of its own ("data-...").
Config data_run(const std::string& name, std::vector<std::string> overrides) {
  return test_support::small_run("data-" + name, std::move(overrides));
}

std::vector<at::Tensor> weights(Trainer& trainer) {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : trainer.model().named_state()) out.push_back(t.clone());
  return out;
}

void expect_identical(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "tensor " << i;
}

}  // namespace

// The start record times everything before the first step, which holds the data's reading and loading.
TEST(TrainerData, TheStartRecordsSetUpTimeHoldsTheDatasReadAndLoad) {
  const auto config = data_run("setup-time", {"data.cache=vram"});
  Trainer trainer(config, test_support::quiet_trainer());
  trainer.fit();
  const auto start = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "start").at(0);
  const double read = start.at("data_read_seconds"), load = start.at("data_load_seconds"), setup = start.at("setup_seconds");
  EXPECT_GT(setup, 0.0);
  EXPECT_GE(setup, read + load) << start.dump();
  // Its phases, which together are the set-up: the data's read in "data", its load in "cache".
  const auto& phases = start.at("setup_phases");
  double sum = 0;
  for (const char* phase :
       {"device", "ranks", "data", "folders", "cache", "model", "model_to_device", "step", "callbacks", "resume", "config_file"}) {
    ASSERT_TRUE(phases.contains(phase)) << phase << " in " << phases.dump();
    EXPECT_GE(phases.at(phase).get<double>(), 0.0) << phase;
    sum += phases.at(phase).get<double>();
  }
  EXPECT_EQ(phases.size(), 11U) << phases.dump();  // and cuda_context on a GPU
  EXPECT_GE(phases.at("data").get<double>(), read) << phases.dump();
  EXPECT_GE(phases.at("cache").get<double>(), load) << phases.dump();
  EXPECT_NEAR(sum, setup, 1e-9) << phases.dump();
}

// The loader hands over exactly the batches the cache gathers: the same run, bit for bit.
TEST(TrainerData, StreamedAndCachedRunsAreIdentical) {
  const auto config = data_run("cached", {"data.cache=vram"});
  Trainer cached(config, test_support::quiet_trainer());
  const auto a = cached.fit();
  EXPECT_EQ(a.data_cache, "vram");
  std::ifstream jsonl(fs::path(config.logging.dir) / "metrics.jsonl");
  std::string start;
  std::getline(jsonl, start);
  EXPECT_NE(start.find("\"data_cache\":\"vram\""), std::string::npos) << start;
  EXPECT_NE(start.find("\"train_samples\":96"), std::string::npos) << start;
  EXPECT_NE(start.find("\"data_load_seconds\":"), std::string::npos) << start;
  for (const std::string workers : {"0", "3"}) {
    Trainer streamed(data_run("streamed" + workers, {"data.cache=none", "data.num_workers=" + workers}), test_support::quiet_trainer());
    const auto b = streamed.fit();
    EXPECT_EQ(b.data_cache, "none");
    EXPECT_EQ(b.samples, a.samples);
    expect_identical(weights(streamed), weights(cached));
  }
}

TEST(TrainerData, AStreamedRunStoppedMidEpochResumesExactly) {
  Trainer straight(data_run("stream-straight", {"data.cache=none", "data.num_workers=2"}), test_support::quiet_trainer());
  straight.fit();
  const auto config = data_run("stream-resumed", {"data.cache=none", "data.num_workers=2"});
  {
    core::clear_stop_request();
    auto options = test_support::quiet_trainer();
    options.after_step = [](std::int64_t step) {
      if (step == 4) core::request_stop();  // 4 of the epoch's 6 steps
    };
    Trainer first(config, options);
    EXPECT_TRUE(first.fit().interrupted);
    core::clear_stop_request();
  }
  Trainer second(config, test_support::quiet_trainer());
  const auto resumed = second.fit();
  EXPECT_EQ(resumed.start_step, 4);
  EXPECT_EQ(resumed.steps, 12);
  expect_identical(weights(second), weights(straight));
}

TEST(TrainerData, DropLastSkipsTheShortBatch) {
  Trainer trainer(data_run("drop-last", {"data.samples=100", "data.drop_last=true"}), test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.total_steps, 12);  // 6 full batches of 16 per epoch; 4 samples left out each
  EXPECT_EQ(result.samples, 192);
}

// profile --step brackets the feed with these two hooks to time it on the GPU: each training
// batch is asked for right after before_batch and handed to on_batch before its step.
TEST(TrainerData, BeforeBatchPrecedesEveryTrainingBatch) {
  auto options = test_support::quiet_trainer();
  std::vector<char> calls;
  options.before_batch = [&] { calls.push_back('b'); };
  options.on_batch = [&](const data::Batch&) { calls.push_back('f'); };
  options.after_step = [&](std::int64_t) { calls.push_back('s'); };
  Trainer trainer(data_run("before-batch", {"data.val_samples=16"}), options);
  const auto result = trainer.fit();
  ASSERT_EQ(result.total_steps, 12);
  // 12 steps (2 epochs of 6), each batch asked for once; the loop stops asking when an epoch's
  // order is used up, and validation batches do not count.
  std::string expected;
  for (int step = 0; step < 12; ++step) expected += "bfs";
  EXPECT_EQ(std::string(calls.begin(), calls.end()), expected);
}

TEST(TrainerData, TrainsOnNpyFilesWithShapeAndClassesFromTheData) {
  const auto config =
      data_run("npy", {"data.source=npy", "data.path=" + format_fixture("npz/x.npy"), "data.labels=" + format_fixture("npz/y.npy"),
                       "data.val_path=" + format_fixture("npz/x.npy"), "data.val_labels=" + format_fixture("npz/y.npy"),
                       "data.classes=auto", "data.shape=[99]", "train.batch_size=10"});
  const auto [result, console] = test_support::fit_capturing_console(config);
  EXPECT_EQ(result.steps, 10);  // 50 samples, batch 10, 2 epochs
  ASSERT_TRUE(result.last_epoch);
  EXPECT_GT(result.last_epoch->val_accuracy, 0.0);
  EXPECT_NE(console.find("data: npy x.npy (50 samples)"), std::string::npos) << console;
  // On the CPU, vram is the in-memory cache: the line says so once, where it names the mode
  // (50 training + 50 validation samples).
  EXPECT_NE(console.find("data.cache auto -> vram (in RAM: training on the CPU): 100 samples, "), std::string::npos) << console;
}

// One file and no validation set of its own: data.val_fraction holds a part out, streamed or cached.
TEST(TrainerData, ValFractionValidatesOnSamplesHeldOutOfTraining) {
  for (const std::string cache : {"vram", "none"}) {
    const auto config = data_run(
        "holdout-" + cache, {"data.source=npy", "data.path=" + format_fixture("npz/x.npy"), "data.labels=" + format_fixture("npz/y.npy"),
                             "data.val_fraction=0.2", "data.cache=" + cache, "train.batch_size=10"});
    const auto [result, console] = test_support::fit_capturing_console(config);
    EXPECT_EQ(result.steps, 8) << cache;  // 40 of the 50 samples train, batch 10, 2 epochs
    ASSERT_TRUE(result.last_epoch);
    EXPECT_GT(result.last_epoch->val_accuracy, 0.0) << cache;
    EXPECT_NE(console.find("10 held out for validation"), std::string::npos) << console;
  }
}

TEST(TrainerData, ARunWithoutValidationDataSaysHowToAddSome) {
  const auto config =
      data_run("no-val", {"data.source=npy", "data.path=" + format_fixture("npz/x.npy"), "data.labels=" + format_fixture("npz/y.npy"),
                          "train.batch_size=25", "checkpoint.best_metric=none"});
  const auto console = test_support::fit_capturing_console(config).console;
  EXPECT_NE(console.find("no validation data, so epochs report the training loss only (data.val_path or data.val_fraction adds some)"),
            std::string::npos)
      << console;
}

TEST(TrainerData, ABatchLargerThanTheDataTakesItAllAndSaysSo) {
  const auto config =
      data_run("batch-over", {"data.source=npy", "data.path=" + format_fixture("npz/x.npy"), "data.labels=" + format_fixture("npz/y.npy"),
                              "train.batch_size=64", "checkpoint.best_metric=none"});
  const auto [result, console] = test_support::fit_capturing_console(config);
  EXPECT_EQ(result.steps, 2);  // 2 epochs of one 50-sample step
  EXPECT_NE(console.find("the effective batch (64) is larger than the 50 training samples"), std::string::npos) << console;
}

TEST(TrainerData, TooFewClassesForTheLabelsIsAUsageError) {
  const auto config = data_run("classes", {"data.source=npz", "data.path=" + format_fixture("npz/stored.npz"), "data.classes=2"});
  try {
    Trainer trainer(config, test_support::quiet_trainer());
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("data.classes is 2 but the labels go up to class id 2"), std::string::npos) << e.what();
  }
}

// Image augmentations on samples that are not images did nothing, silently: said in a note (of
// unread_settings, which is called with the data's shape). A crop
// padding as wide as the images (crops of padding alone; at 100,000 a 3.5 TiB batch the OOM
// handler halved in vain) is refused before the first step, with the usual value.
TEST(TrainerData, AugmentationsThatCannotApplyAreNamed) {
  const auto flat = test_support::fit_capturing_console(data_run("augment-flat", {"data.hflip=true", "data.crop_padding=4"}));
  for (const auto* line : {"note: data.crop_padding is 4, but the samples are shaped [10], not [channels, height, width]: only images are "
                           "cropped and flipped",
                           "note: data.hflip is true, but the samples are shaped [10]"})
    EXPECT_NE(flat.console.find(line), std::string::npos) << flat.console;
  const auto wide = test_support::usage_error_and_fix([] {
    Trainer(data_run("augment-wide", {"model.name=small_cnn", "data.shape=[3, 8, 6]", "data.crop_padding=6"}),
            test_support::quiet_trainer());
  });
  EXPECT_NE(wide.find("data.crop_padding 6 is as wide as the images ([3, 8, 6]) or wider: a random crop could hold padding alone"),
            std::string::npos)
      << wide;
  EXPECT_NE(wide.find("(4 for 32 x 32 images, as in the CIFAR recipes)"), std::string::npos) << wide;
  const auto images = test_support::fit_capturing_console(
      data_run("augment-images", {"model.name=small_cnn", "data.shape=[3, 8, 6]", "data.crop_padding=5", "data.hflip=true"}));
  EXPECT_EQ(images.console.find("not applied"), std::string::npos) << images.console;
}

// An id column among a CSV's features is named in the run's log with the line that leaves it out,
// and the line goes once it is left out.
TEST(TrainerData, AnIdColumnAmongTheFeaturesIsNamedUntilItIsLeftOut) {
  const auto file = fs::temp_directory_path() / "gputrain-id-column.csv";
  {
    std::ofstream out(file);
    out << "id,x,label\n";
    for (int i = 0; i < 200; ++i) out << 1000 + i << ',' << (i % 7) * 0.25 << ',' << i % 2 << '\n';
  }
  const auto run = [&](const std::string& name, std::vector<std::string> extra) {
    extra.insert(extra.end(), {"data.source=csv", "data.path=" + file.string(), "data.labels=label", "train.batch_size=50"});
    return test_support::fit_capturing_console(data_run(name, extra)).console;
  };
  const auto with_id = run("id-column", {});
  EXPECT_NE(with_id.find("feature 'id' (1000, 1001, 1002, ... down the file) looks like a row number or an id"), std::string::npos)
      << with_id;
  EXPECT_NE(with_id.find("leave it out with data.exclude: [id]"), std::string::npos) << with_id;
  const auto without = run("id-left-out", {"data.exclude=[id]"});
  EXPECT_EQ(without.find("row number"), std::string::npos) << without;
  fs::remove(file);
}

// A run folder reused for another table: its checkpoint's first layer has the old table's width.
// The error names the data.path that changed and offers a folder of the run's own.
TEST(TrainerData, AFolderReusedForAnotherTableNamesTheDataPathThatChanged) {
  const auto table = [](const std::string& name, int features) {
    const auto file = fs::temp_directory_path() / ("gputrain-reused-" + name + ".csv");
    std::ofstream out(file);
    for (int f = 0; f < features; ++f) out << 'x' << f << ',';
    out << "label\n";
    for (int i = 0; i < 40; ++i) {
      for (int f = 0; f < features; ++f) out << (i + f) % 5 << ',';
      out << i % 2 << '\n';
    }
    return file.string();
  };
  const auto wide = table("wide", 3), narrow = table("narrow", 2);
  const std::vector<std::string> csv{"data.source=csv", "data.labels=label", "data.classes=auto", "train.max_steps=2"};
  auto first = csv;
  first.push_back("data.path=" + wide);
  Trainer(data_run("reused-folder", first), test_support::quiet_trainer()).fit();
  auto second = csv;
  second.push_back("data.path=" + narrow);
  try {
    Trainer(test_support::small_run("data-reused-folder", second, /*fresh=*/false), test_support::quiet_trainer());
    ADD_FAILURE() << "resumed a 3-feature model on a 2-feature table";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in the checkpoint but"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("data.path " + wide + " -> " + narrow), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("give this run its own folder (--set logging.dir=runs/NAME)"), std::string::npos) << e.remedy();
  }
  fs::remove(wide);
  fs::remove(narrow);
}

// Integer values (prices) read as class ids would make max + 1 classes, most never a label: the run
// stops with both ways out, and data.classes set by hand means the user wants them as they are.
TEST(TrainerData, SparseLargeClassIdsAreTakenForValuesUnlessDataClassesConfirmsThem) {
  const auto file = fs::temp_directory_path() / "gputrain-sparse-class-ids.safetensors";
  const auto prices = at::randint(100000, 400000, {96}, at::kLong);
  data::write_safetensors(file.string(), {{"x", at::randn({96, 10})}, {"y", prices}});
  const auto classes = std::to_string(prices.max().item<std::int64_t>() + 1);
  auto config = data_run("sparse-ids", {"data.source=safetensors", "data.path=" + file.string(), "data.classes=auto"});
  try {
    auto opened = config;
    open_data(opened);
    ADD_FAILURE() << "sparse class ids were taken as classes";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("look like values to predict, not class ids: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("which as class ids make " + classes + " classes"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("set data.task: regression"), std::string::npos) << e.remedy();
    EXPECT_NE(e.remedy().find("set data.classes: " + classes), std::string::npos) << e.remedy();
  }
  auto confirmed = data_run("sparse-ids", {"data.source=safetensors", "data.path=" + file.string(), "data.classes=" + classes});
  EXPECT_EQ(open_data(confirmed).sources.classes, std::stoll(classes));
  // Dense ids (every id of 0..1199 used, twice: ids used once each name samples) are classes however many there are.
  data::write_safetensors(file.string(), {{"x", at::randn({2400, 10})}, {"y", at::arange(2400, at::kLong).floor_divide(2)}});
  auto dense = data_run("dense-ids", {"data.source=safetensors", "data.path=" + file.string(), "data.classes=auto"});
  open_data(dense);
  EXPECT_EQ(dense.data.classes, 1200);
  fs::remove(file);
}

// A file whose training labels are all one class stops before anything trains (exit 2); synthetic
// data, generated by the run itself, is never refused for it.
TEST(TrainerData, AFileOfOneClassIsRefusedBeforeTraining) {
  const auto file = fs::temp_directory_path() / "gputrain-one-class.safetensors";
  data::write_safetensors(file.string(), {{"x", at::randn({40, 4})}, {"y", at::full({40}, 2, at::kLong)}});
  auto config = data_run("one-class", {"data.source=safetensors", "data.path=" + file.string(), "data.classes=auto"});
  try {
    open_data(config);
    ADD_FAILURE() << "labels of one class were trained on";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the training labels are all class 2: a classifier learns nothing from one class"),
              std::string::npos)
        << e.what();
  }
  fs::remove(file);
  auto synthetic = data_run("one-class-synthetic", {"data.samples=1", "data.val_samples=0", "data.classes=2"});
  EXPECT_NO_THROW(open_data(synthetic));
}

// A validation file's class that no training label has is named among the run's data notes.
TEST(TrainerData, AValidationClassNoTrainingLabelHasIsNoted) {
  const auto train = fs::temp_directory_path() / "gputrain-unseen-train.safetensors";
  const auto val = fs::temp_directory_path() / "gputrain-unseen-val.safetensors";
  data::write_safetensors(train.string(), {{"x", at::randn({40, 4})}, {"y", at::arange(40, at::kLong) % 2}});
  data::write_safetensors(val.string(), {{"x", at::randn({8, 4})}, {"y", at::tensor({0, 1, 0, 1, 2, 0, 1, 2}, at::kLong)}});
  auto config = data_run("unseen-class",
                         {"data.source=safetensors", "data.path=" + train.string(), "data.val_path=" + val.string(), "data.classes=auto"});
  const auto data = open_data(config);
  EXPECT_EQ(config.data.classes, 3);
  const auto& notes = data.data_notes;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("the validation labels hold class 2, which no training label has (2 validation samples of 8)") != std::string::npos;
  })) << core::join(notes, "\n");
  fs::remove(train);
  fs::remove(val);
}

// Synthetic classes fall as the generator drew them: with a thousand classes of about a dozen
// samples each they are uneven by chance and some validation class is missing from training,
// and notes on that would advise the user to reweigh data they did not make.
TEST(TrainerData, SyntheticClassesGetNoNotesOnTheirBalance) {
  auto config = data_run("synthetic-balance", {"data.shape=[4]", "data.classes=1000", "data.samples=12800", "data.val_samples=1280"});
  const auto data = open_data(config);
  const auto notes = core::join(data.data_notes, "\n");
  EXPECT_EQ(notes.find("unbalanced"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("no training label has"), std::string::npos) << notes;
  EXPECT_FALSE(data.unbalanced_classes);
}

// The error of a Trainer built with a stop already requested (the stop cleared again after).
static Error stopped_setup(const Config& config) {
  core::request_stop();
  try {
    Trainer trainer(config, test_support::quiet_trainer());
  } catch (const Error& e) {
    core::clear_stop_request();
    return e;
  }
  core::clear_stop_request();
  ADD_FAILURE() << "set-up went on through a stop request";
  return Error("", "");
}

// Decoding a large image folder into the cache takes minutes: a stop meanwhile ends the run there
// (exit 130), not after the whole load and a first step.
TEST(TrainerData, AStopWhileTheCacheLoadsEndsTheRunThereWithExit130) {
  const auto e = stopped_setup(data_run("images-stopped", {"data.source=image_folder", "data.path=" + format_fixture("folder/train"),
                                                           "data.image_size=[16, 16]", "model.name=small_cnn", "data.cache=vram"}));
  EXPECT_EQ(e.exit_code(), ExitCode::interrupted);
  EXPECT_NE(std::string(e.what()).find("interrupted while loading image folder"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("before any training step: nothing to resume"), std::string::npos) << e.what();
}

// Parsing a large CSV takes a while too: a stop meanwhile ends the read and the run there.
TEST(TrainerData, AStopWhileACsvIsReadEndsTheRunThereWithExit130) {
  const auto e =
      stopped_setup(data_run("csv-stopped", {"data.source=csv", "data.path=" + format_fixture("csv/numeric.csv"), "data.labels=label"}));
  EXPECT_EQ(e.exit_code(), ExitCode::interrupted);
  EXPECT_NE(std::string(e.what()).find("interrupted while reading " + format_fixture("csv/numeric.csv")), std::string::npos) << e.what();
}

TEST(TrainerData, ImageFolderRunSkipsTheCorruptImageAndSaysSo) {
  for (const std::string cache : {"vram", "none"}) {
    const auto config =
        data_run("images-" + cache, {"data.source=image_folder", "data.path=" + format_fixture("folder/train"),
                                     "data.val_path=" + format_fixture("folder/val"), "data.image_size=[16, 16]", "data.classes=auto",
                                     "model.name=small_cnn", "train.batch_size=4", "data.cache=" + cache, "data.num_workers=2",
                                     "data.mean=[0.5, 0.5, 0.5]", "data.std=[0.25, 0.25, 0.25]", "data.hflip=true", "data.crop_padding=2"});
    const auto [result, console] = test_support::fit_capturing_console(config);
    EXPECT_EQ(result.skipped_samples, 2) << cache;  // broken.jpg and empty.png
    EXPECT_EQ(result.samples, 12) << cache;         // 6 readable images, 2 epochs
    EXPECT_NE(console.find("broken.jpg: corrupt JPEG"), std::string::npos) << console;
    EXPECT_NE(console.find("2 images in formats not read (1 .bmp, 1 .webp)"), std::string::npos) << console;
    EXPECT_NE(console.find("which gputrain does not decode, so they are not trained on; Pillow writes a .png beside each"),
              std::string::npos)
        << console;
  }
}

// Streamed without shuffling, the second batch of two is cat/2.jpg and cat/broken.jpg: one sample
// reaches the MLP's batch norm, which cannot take it. The run names the unreadable file before the
// error, and the fix that works: a cache leaves such files out before the first step.
TEST(TrainerData, AStreamedBatchLeftWithOneSampleNamesTheUnreadableFileAndTheCacheThatAvoidsIt) {
  std::vector<std::string> settings = {"data.source=image_folder", "data.path=" + format_fixture("folder/train"),
                                       "data.image_size=[8, 8]",   "model.name=mlp",
                                       "model.norm=batch",         "model.hidden=[8]",
                                       "train.batch_size=2",       "data.shuffle=false",
                                       "data.num_workers=0",       "train.epochs=1",
                                       "logging.progress=lines"};
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  auto streamed = settings;
  streamed.push_back("data.cache=none");
  try {
    Trainer(data_run("images-lone-streamed", streamed), options).fit();
    ADD_FAILURE() << "a pass of one sample trained";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Expected more than 1 value per channel"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("set data.cache: ram"), std::string::npos) << e.remedy();
  }
  EXPECT_NE(console.str().find("broken.jpg: corrupt JPEG"), std::string::npos) << console.str();
  settings.push_back("data.cache=ram");
  EXPECT_GT(test_support::fit_capturing_console(data_run("images-lone-cached", settings)).result.steps, 0);
}

TEST(TrainerData, StandardizeMeasuresAnImageFolderFromItsImages) {
  const auto config = data_run("images-standardized",
                               {"data.source=image_folder", "data.path=" + format_fixture("folder/train"), "data.image_size=[16, 16]",
                                "model.name=small_cnn", "train.batch_size=4", "data.standardize=true", "logging.progress=lines"});
  const auto [result, console] = test_support::fit_capturing_console(config);
  EXPECT_GT(result.steps, 0);
  EXPECT_NE(console.find("data.standardize: per-channel mean ["), std::string::npos) << console;
  EXPECT_NE(console.find("] of 6 training samples"), std::string::npos) << console;
}

// A streamed run's staging buffers are allocated before the first batch and filled as it goes:
// past the free RAM (here a cap of 512 MiB against 256 training buffers of 4 MiB) the run is
// refused with the sizes and the settings that shrink them, instead of being killed mid-epoch.
TEST(TrainerData, StagingBuffersPastTheFreeRamAreRefusedBeforeTheFirstBatch) {
  const auto config = data_run(
      "staging-past-ram", {"data.shape=[65536]", "data.cache=none", "data.num_workers=16", "data.prefetch=16", "device.max_memory=512MiB"});
  const auto error = test_support::thrown_usage_error([&] { Trainer trainer(config, test_support::quiet_trainer()); });
  ASSERT_TRUE(error) << "a run whose staging buffers pass the cap was set up";
  EXPECT_NE(std::string(error->what())
                .find("the data loader's staging buffers need 2.00 GiB of RAM (256 buffers of 4.00 MiB (16 samples) "
                      "for training, 256 buffers of 4.00 MiB (16 samples) for validation), more than the "),
            std::string::npos)
      << error->what();
  EXPECT_NE(error->remedy().find("lower train.batch_size"), std::string::npos) << error->remedy();
  EXPECT_NO_THROW(Trainer(data_run("staging-past-ram", {"data.shape=[65536]", "data.cache=none", "data.num_workers=1", "data.prefetch=2",
                                                        "device.max_memory=512MiB"}),
                          test_support::quiet_trainer()))
      << "2 buffers fit";
}
