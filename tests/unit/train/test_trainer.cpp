// Trainer end to end on the CPU: what a run writes and says, its data checks and precision notes,
// its stopping rules, and the figures it trains to.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/scratch_folder.hpp"
#include "support/small_run.hpp"
#include "support/tensor_checks.hpp"
#include "support/text_checks.hpp"
#include "train/setup/cpu_precision.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;
using test_support::expect_bit_identical;
using test_support::lines_containing;
using test_support::model_state;
using test_support::small_run;

TEST(Trainer, TrainsAndWritesEverythingToTheRunDirectory) {
  const auto config = small_run("complete");
  Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(result.steps, 12);
  EXPECT_EQ(result.total_steps, 12);
  ASSERT_TRUE(result.last_epoch && result.last_epoch->val_loss && result.last_epoch->val_accuracy);
  ASSERT_TRUE(result.first_loss && result.last_loss);
  const fs::path dir = config.logging.dir;
  for (const char* file : {"config.yaml", "training.log", "metrics.jsonl", "model.safetensors", "checkpoints/best.pt"})
    EXPECT_TRUE(fs::exists(dir / file)) << file;
  EXPECT_EQ(lines_containing(dir / "metrics.jsonl", "\"kind\":\"step\""), 7);  // steps 1, 2, 4, ..., 12
  EXPECT_EQ(lines_containing(dir / "metrics.jsonl", "\"kind\":\"epoch\""), 2);
  bool has_events = false;
  for (const auto& entry : fs::directory_iterator(dir))
    has_events |= entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  EXPECT_TRUE(has_events);
  EXPECT_EQ(checkpoint_config(result.last_checkpoint), to_yaml(config));
}

// How a run ended is recorded in training.log; the console leaves it to the caller, who reports it
// from FitResult (the command's summary), so it is not said twice.
TEST(Trainer, TheOutcomeIsRecordedInTheLogButNotSaidOnTheConsole) {
  for (const bool interrupt : {false, true}) {
    const auto config = small_run(interrupt ? "outcome-stopped" : "outcome-done");
    std::ostringstream console;
    auto options = test_support::quiet_trainer();
    options.console = &console;
    options.after_step = [interrupt](std::int64_t step) {
      if (interrupt && step == 3) core::request_stop();
    };
    Trainer trainer(config, options);
    const auto result = trainer.fit();
    core::clear_stop_request();
    const std::string outcome =
        interrupt ? "interrupted after step 3; checkpoint " + result.last_checkpoint : "final weights: " + result.weights_path;
    EXPECT_EQ(lines_containing(fs::path(config.logging.dir) / "training.log", outcome), 1) << outcome;
    EXPECT_EQ(console.str().find(interrupt ? "interrupted" : "final weights"), std::string::npos) << console.str();
  }
}

// A run that fails records why in training.log, with the fix, which is often all a batch job keeps.
TEST(Trainer, AFailureIsRecordedInTheLogWithItsFix) {
  const auto config = small_run("outcome-failed");
  const fs::path checkpoints = config.checkpoint_dir();
  auto options = test_support::quiet_trainer();
  options.after_step = [&checkpoints](std::int64_t step) {
    // The end of epoch 1 (step 6) cannot write best.pt: a file stands where the folder was.
    if (step == 3) {
      fs::remove_all(checkpoints);
      std::ofstream(checkpoints) << "not a folder\n";
    }
  };
  Trainer trainer(config, options);
  std::string message, remedy;
  try {
    trainer.fit();
    ADD_FAILURE() << "the checkpoint was written";
  } catch (const Error& e) {
    message = e.what();
    remedy = e.remedy();
  }
  EXPECT_NE(message.find((checkpoints / "best.pt").string()), std::string::npos) << message;
  std::ifstream log(fs::path(config.logging.dir) / "training.log");
  std::string line, last;
  while (std::getline(log, line)) last = line;
  EXPECT_NE(last.find("failed: " + message + "; fix: " + remedy), std::string::npos) << last;
}

// data.standardize measures the training set's per-feature mean and std and then trains exactly as
// a run given those figures does; they are logged and saved with the weights.
TEST(Trainer, StandardizeTrainsAsTheMeasuredMeanAndStdGivenByHand) {
  const auto config = small_run("standardized", {"data.standardize=true"});
  auto opened = config;
  const auto data = open_data(opened);
  const auto expected = data::measure_channel_stats(data.sources.train->tensors()->inputs);
  ASSERT_EQ(opened.data.mean.size(), 10u);
  EXPECT_EQ(opened.data.mean, expected.mean);
  EXPECT_EQ(opened.data.std, expected.std);
  EXPECT_EQ(data.transform.mean, expected.mean);

  const auto yaml_list = [](const std::vector<double>& values) {
    std::ostringstream text;
    text.precision(17);
    text << "[";
    for (std::size_t i = 0; i < values.size(); ++i) text << (i ? ", " : "") << values[i];
    return text.str() + "]";
  };
  Trainer measured(config, test_support::quiet_trainer());
  const auto result = measured.fit();
  Trainer given(small_run("given-mean-std", {"data.mean=" + yaml_list(expected.mean), "data.std=" + yaml_list(expected.std)}),
                test_support::quiet_trainer());
  given.fit();
  expect_bit_identical(model_state(measured), model_state(given));
  Trainer plain(small_run("not-standardized"), test_support::quiet_trainer());
  plain.fit();
  EXPECT_FALSE(at::equal(model_state(measured).front().second, model_state(plain).front().second));

  EXPECT_EQ(lines_containing(fs::path(config.logging.dir) / "training.log", "data.standardize: per-feature mean ["), 1);
  std::ifstream weights(result.weights_path, std::ios::binary);
  const std::string head((std::istreambuf_iterator<char>(weights)), std::istreambuf_iterator<char>());
  EXPECT_NE(head.find("\"data.mean\":\"["), std::string::npos);
  EXPECT_NE(head.find("\"data.std\":\"["), std::string::npos);
}

// data.standardize_targets trains as targets standardised by hand do (the same model up to float
// rounding), while val mse and mae come out in the targets' own units and the figures are saved
// with the weights, which predict standardised targets.
TEST(Trainer, StandardizeTargetsTrainsAsTargetsStandardisedByHandAndReportsErrorsInTheirUnits) {
  const auto dir = fs::temp_directory_path() / "gputrain-standardize-targets";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto prices = [](std::int64_t n) {
    const auto x = at::randn({n, 10});
    return std::make_pair(x, 250000 + 80000 * (x.slice(1, 0, 1) - 0.5 * x.slice(1, 1, 2)));
  };
  const auto [x, y] = prices(96);
  const auto [val_x, val_y] = prices(32);
  const auto y64 = y.to(at::kDouble);
  const double mean = y64.mean().item<double>(), std = (y64 - mean).pow(2).mean().sqrt().item<double>();
  const auto by_hand = [&](const at::Tensor& t) { return ((t.to(at::kDouble) - mean) / std).to(at::kFloat); };
  const auto write = [&](const std::string& name, const at::Tensor& inputs, const at::Tensor& targets) {
    const auto path = (dir / name).string();
    data::write_safetensors(path, {{"x", inputs}, {"y", targets}});
    return path;
  };
  const auto run = [&](const std::string& name, const std::string& train, const std::string& val, std::vector<std::string> more) {
    std::vector<std::string> settings{"data.source=safetensors", "data.task=regression", "data.path=" + train, "data.val_path=" + val};
    settings.insert(settings.end(), more.begin(), more.end());
    return small_run(name, settings);
  };
  const auto config = run("targets-standardized", write("train.safetensors", x, y), write("val.safetensors", val_x, val_y),
                          {"data.standardize_targets=true"});
  Trainer measured(config, test_support::quiet_trainer());
  const auto result = measured.fit();
  Trainer hand(
      run("targets-by-hand", write("train-hand.safetensors", x, by_hand(y)), write("val-hand.safetensors", val_x, by_hand(val_y)), {}),
      test_support::quiet_trainer());
  const auto reference = hand.fit();

  const auto a = model_state(measured), b = model_state(hand);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::allclose(a[i].second, b[i].second, 1e-4, 1e-5)) << a[i].first;
  ASSERT_TRUE(result.last_epoch && reference.last_epoch);
  const auto& got = *result.last_epoch;
  const auto& want = *reference.last_epoch;
  ASSERT_TRUE(got.val_loss && got.val_mse && got.val_mae && want.val_loss && want.val_mse && want.val_mae);
  EXPECT_NEAR(*got.val_loss, *want.val_loss, 1e-4 * *want.val_loss);  // the loss as training sees it
  EXPECT_NEAR(*got.val_mse, *want.val_mse * std * std, 1e-3 * *want.val_mse * std * std);
  EXPECT_NEAR(*got.val_mae, *want.val_mae * std, 1e-3 * *want.val_mae * std);
  EXPECT_GT(*got.val_mae, 1000);  // in price units, not standardised ones

  EXPECT_EQ(lines_containing(fs::path(config.logging.dir) / "training.log", "data.standardize_targets: per-target mean ["), 1);
  std::ifstream weights(result.weights_path, std::ios::binary);
  const std::string head((std::istreambuf_iterator<char>(weights)), std::istreambuf_iterator<char>());
  EXPECT_NE(head.find("\"data.target_mean\":\"["), std::string::npos);
  EXPECT_NE(head.find("\"data.target_std\":\"["), std::string::npos);
  // Without it, the run says the targets are large and what fixes it.
  const auto raw = run("targets-raw", (dir / "train.safetensors").string(), (dir / "val.safetensors").string(), {});
  Trainer plain(raw, test_support::quiet_trainer());
  plain.fit();
  EXPECT_EQ(lines_containing(fs::path(raw.logging.dir) / "training.log", "regression targets far from unit scale"), 1);
  fs::remove_all(dir);
}

// NaN in the data would end the run as "diverged" at the first batch that holds it: the run is
// refused before it starts, naming the sample, with the fix for the data rather than the lr.
TEST(Trainer, NanInTheDataIsRefusedBeforeTheFirstStep) {
  const auto file = fs::temp_directory_path() / "gputrain-nan-data.safetensors";
  auto x = at::randn({64, 10});
  x[5][3] = std::numeric_limits<float>::quiet_NaN();
  data::write_safetensors(file.string(), {{"x", x}, {"y", at::randint(0, 3, {64}, at::kLong)}});
  try {
    Trainer trainer(small_run("nan-data", {"data.source=safetensors", "data.path=" + file.string()}), test_support::quiet_trainer());
    ADD_FAILURE() << "a run on NaN data started";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "holds NaN or inf values in 1 of its 64 samples; the first is gputrain-nan-data.safetensors sample 5 (nan in "
                  "its inputs)"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.remedy().find("optimizer.lr"), std::string::npos) << e.remedy();
  }
  fs::remove(file);
}

// A loader thread count beyond the cores (copied from a bigger machine) is noted with auto's pick;
// one within them is not.
TEST(Trainer, MoreLoaderThreadsThanCoresAreNoted) {
  const auto cores = static_cast<int>(device::collect_system_info().usable_cores);
  const auto console_with = [](int workers) {
    auto config = small_run("many-workers", {"train.max_steps=1", "logging.progress=lines", "data.num_workers=" + std::to_string(workers)});
    return test_support::fit_capturing_console(config).console;
  };
  const auto crowded = console_with(cores + 1);
  EXPECT_NE(crowded.find("note: data.num_workers " + std::to_string(cores + 1) + " is more loader threads than the "), std::string::npos)
      << crowded;
  EXPECT_NE(crowded.find(" usable cores of a rank here, so they take turns with the training thread"), std::string::npos) << crowded;
  EXPECT_NE(crowded.find("data.num_workers: auto picks "), std::string::npos) << crowded;
  EXPECT_EQ(console_with(1).find("more loader threads"), std::string::npos);
}

// Half precision on a CPU without its instructions runs in software (a ResNet-18 step took 35x
// fp32's in fp16 on a Zen 3; an MLP's 14x in bf16 on an AMD EPYC): the run says so, with the
// precision that trains faster on that CPU. The note follows the CPU's instructions alone.
TEST(Trainer, HalfPrecisionOnACpuWithoutItsInstructionsIsNotedAsSlow) {
  const CpuHalfSupport neither{"AMD EPYC", false, false}, bf16_only{"Xeon", true, false}, both{"Xeon 6", true, true};
  EXPECT_EQ(cpu_precision_note(Precision::fp16_mixed, neither),
            "train.precision fp16-mixed on the CPU (AMD EPYC, without AVX512-FP16 or AMX-FP16): LibTorch computes fp16 there without "
            "vector instructions, so steps take many times longer than in fp32 (a ResNet-18 step 35x as long on an AMD Zen 3); --set "
            "train.precision=fp32 trains faster here");
  EXPECT_NE(cpu_precision_note(Precision::fp16_mixed, bf16_only)
                .find("--set train.precision=bf16-mixed (this CPU has bf16 instructions) or fp32"),
            std::string::npos);
  EXPECT_NE(cpu_precision_note(Precision::bf16_mixed, neither)
                .find("train.precision bf16-mixed on the CPU (AMD EPYC, without AVX512-BF16 or AMX-BF16): LibTorch converts bf16 in "
                      "software there"),
            std::string::npos);
  EXPECT_EQ(cpu_precision_note(Precision::bf16_mixed, bf16_only), "");
  EXPECT_EQ(cpu_precision_note(Precision::fp16_mixed, both), "");
  EXPECT_EQ(cpu_precision_note(Precision::fp32, neither), "");
  // A run on this machine says what its CPU calls for, and nothing for fp32.
  const auto notes = [](const std::string& precision) {
    return core::join(prepare_device(small_run("precision-note", {"train.precision=" + precision})).notes);
  };
  const auto here = cpu_half_support();
  EXPECT_EQ(notes("bf16-mixed").find("train.precision bf16-mixed on the CPU") != std::string::npos, !here.bf16) << notes("bf16-mixed");
  EXPECT_EQ(notes("fp16-mixed").find("train.precision fp16-mixed on the CPU") != std::string::npos, !here.fp16) << notes("fp16-mixed");
  EXPECT_EQ(notes("fp32").find("train.precision"), std::string::npos);
}

// A file where the run's folder (or one above it) would go is named, not "Not a directory".
TEST(Trainer, AFileWhereTheRunFolderGoesIsNamed) {
  test_support::ScratchFolder scratch("file-where-the-run-folder-goes");  // its own: tests run side by side
  const auto file = scratch.path / "a-file";
  std::ofstream(file) << "x";
  for (const auto& dir : {file, file / "run"}) {
    try {
      Trainer(small_run("a-file", {"logging.dir=" + dir.string()}), test_support::quiet_trainer());
      ADD_FAILURE() << "a run folder under a file";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("logging.dir: '" + dir.string() + "' cannot be created: '" + file.string() + "' is a file"),
                std::string::npos)
          << e.what();
    }
  }
}

// model.name auto: the data's sample shape picks the model, the run says which, and a resumed run
// (whose checkpoint keeps `auto` as given) is the same run, whether it says auto or the name.
TEST(Trainer, ModelNameAutoPicksTheSmallCnnForImagesAndTheMlpForAnythingElse) {
  const auto chosen = [](std::vector<std::string> sets) {
    sets.insert(sets.begin(), "model.name=auto");
    auto config = small_run("auto-model", sets);
    const auto data = open_data(config);
    return std::make_pair(config.model.name, data.model_choice);
  };
  const auto [vectors, said] = chosen({"data.shape=[10]"});
  EXPECT_EQ(vectors, "mlp");
  EXPECT_EQ(said, "model.name auto: mlp, for samples shaped [10] (small_cnn is for [channels, height, width] images)");
  EXPECT_EQ(chosen({"data.shape=[4, 8]"}).first, "mlp");
  EXPECT_EQ(chosen({"data.shape=[3, 8, 8]"}).first, "small_cnn");
  EXPECT_EQ(chosen({"data.shape=[1, 2, 3, 4]"}).first, "mlp");
  // A name given is kept and not remarked on; with a TorchScript file the name is not used at all.
  auto named = small_run("auto-model", {"data.shape=[3, 8, 8]"});
  EXPECT_TRUE(open_data(named).model_choice.empty());
  EXPECT_EQ(named.model.name, "mlp");
  auto scripted = small_run("auto-model", {"model.name=auto", "model.torchscript=net.pt"});
  EXPECT_TRUE(open_data(scripted).model_choice.empty());
  EXPECT_EQ(scripted.model.name, "auto");

  const auto [first, first_console] =
      test_support::fit_capturing_console(small_run("auto-resume", {"model.name=auto", "train.max_steps=2"}));
  EXPECT_EQ(first.model, "mlp");
  EXPECT_NE(first_console.find("model.name auto: mlp"), std::string::npos) << first_console;
  std::int64_t steps = 2;
  for (const char* name : {"auto", "mlp"}) {
    const auto [again, console] = test_support::fit_capturing_console(
        small_run("auto-resume", {std::string("model.name=") + name, "train.max_steps=" + std::to_string(steps + 1)}, /*fresh=*/false));
    EXPECT_EQ(again.start_step, steps++) << "model.name " << name << ": " << console;
  }
}

TEST(Trainer, StandardizeRefusesSamplesThatAreNeitherVectorsNorImages) {
  try {
    Trainer trainer(small_run("standardize-sequences", {"data.standardize=true", "data.shape=[4, 8]"}), test_support::quiet_trainer());
    ADD_FAILURE() << "[4, 8] samples were standardized";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("samples have shape [4, 8]"), std::string::npos) << e.what();
    // [sequence, features]: data.mean would apply per position, so the fix standardizes the data itself.
    EXPECT_NE(e.remedy().find("x = (x - x.mean(axis=(0, 1))) / x.std(axis=(0, 1))"), std::string::npos) << e.remedy();
  }
}

// An unwritable run or checkpoint folder stops the run before its first step, naming the key: a
// run must not train for an hour and then fail to save.
TEST(Trainer, UnwritableFoldersStopTheRunBeforeItStarts) {
  test_support::ScratchFolder scratch("unwritable-run-folders");
  const auto file = scratch.path / "a-file";
  std::ofstream(file) << "not a folder";
  for (const auto& [key, setting] : {std::pair<std::string, std::string>{"logging.dir", "logging.dir=" + file.string()},
                                     {"checkpoint.dir", "checkpoint.dir=" + (file / "checkpoints").string()}}) {
    try {
      Trainer trainer(small_run("unwritable", {setting}), test_support::quiet_trainer());
      trainer.fit();
      ADD_FAILURE() << key << " under a file was accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(key + ": ", 0), 0u) << e.what();
    }
  }
}

// Epochs x steps past 64 bits wrapped to a negative count and trained nothing (exit 0): now it is
// refused with the fix, and train.max_steps bounds such a run.
TEST(Trainer, EpochsWhoseStepsOverflowAreRefusedUnlessMaxStepsBoundsThem) {
  try {
    Trainer trainer(small_run("epochs-overflow", {"train.epochs=9223372036854775807"}), test_support::quiet_trainer());
    FAIL() << "the run started";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("past the largest step count"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("train.max_steps"), std::string::npos) << e.remedy();
  }
  Trainer bounded(small_run("epochs-overflow-bounded", {"train.epochs=1152921504606846976", "train.max_steps=3"}),
                  test_support::quiet_trainer());
  EXPECT_EQ(bounded.fit().steps, 3);
}

TEST(Trainer, MaxStepsStopsEarly) {
  Trainer trainer(small_run("max-steps", {"train.max_steps=5"}), test_support::quiet_trainer());
  EXPECT_EQ(trainer.fit().steps, 5);
}

// samples/s, the data stall and step_seconds describe the training steps: a validation set 2,000
// times the training set (and a checkpoint per epoch) costs most of the wall time but none of it
// is counted as a step's.
TEST(Trainer, StepFiguresLeaveOutValidationAndCheckpoints) {
  const auto start = std::chrono::steady_clock::now();
  Trainer trainer(small_run("step-figures", {"data.samples=32", "data.val_samples=64000", "model.hidden=[512, 512]", "train.epochs=2",
                                             "checkpoint.every_epochs=1"}),
                  test_support::quiet_trainer());
  const auto result = trainer.fit();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.steps, 4);
  EXPECT_LT(result.step_seconds, 0.5 * wall) << "validation counted as step time";
  EXPECT_NEAR(result.samples_per_second, 64 / result.step_seconds, 1e-6 * result.samples_per_second);
  EXPECT_LE(result.run_seconds, wall);  // the whole fit(), validation included
  EXPECT_GT(result.run_seconds, 2 * result.step_seconds);
}

TEST(Trainer, LossFallsOnALearnableTask) {
  Trainer trainer(small_run("learns", {"train.epochs=8", "model.dropout=0", "optimizer.lr=0.01"}), test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_LT(*result.last_loss, 0.7 * *result.first_loss);
}

// train.label_smoothing softens the training loss only: validation reports the plain cross-entropy,
// comparable with runs without it. With lr 0 the weights stay the initial ones, so both runs
// validate the same model.
TEST(Trainer, LabelSmoothingSoftensTheTrainingLossButNotTheValidationLoss) {
  FitResult results[2];
  for (int smoothed = 0; smoothed < 2; ++smoothed) {
    Trainer trainer(
        small_run("label-smoothing-" + std::to_string(smoothed), {"optimizer.lr=0", "model.dropout=0", "model.norm=batch", "train.epochs=1",
                                                                  "train.label_smoothing=" + std::string(smoothed ? "0.2" : "0")}),
        test_support::quiet_trainer());
    results[smoothed] = trainer.fit();
  }
  ASSERT_TRUE(results[0].first_loss && results[1].first_loss && results[0].last_epoch && results[1].last_epoch);
  EXPECT_GT(std::abs(*results[1].first_loss - *results[0].first_loss), 1e-3) << "smoothing left the training loss as it was";
  EXPECT_DOUBLE_EQ(*results[1].last_epoch->val_loss, *results[0].last_epoch->val_loss);
}

// Accumulating two micro-batches of 8 is one step on the batch of 16 they make.
TEST(Trainer, GradientAccumulationMatchesTheLargerBatch) {
  Trainer big(small_run("accum-big", {"model.dropout=0", "train.max_steps=3"}), test_support::quiet_trainer());
  big.fit();
  Trainer accumulated(small_run("accum-small", {"model.dropout=0", "train.max_steps=3", "train.batch_size=8", "train.grad_accum=2"}),
                      test_support::quiet_trainer());
  accumulated.fit();
  const auto a = model_state(big), b = model_state(accumulated);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::allclose(a[i].second, b[i].second, 1e-5, 1e-6)) << a[i].first;
}

TEST(Trainer, Fp16AndBf16MixedPrecisionTrainOnCpu) {
  for (const char* precision : {"fp16-mixed", "bf16-mixed"}) {
    Trainer trainer(small_run(std::string("amp-") + precision,
                              {std::string("train.precision=") + precision, "train.max_steps=4", "train.deterministic=false"}),
                    test_support::quiet_trainer());
    const auto result = trainer.fit();
    EXPECT_EQ(result.steps, 4) << precision;
    EXPECT_TRUE(std::isfinite(*result.last_loss)) << precision;
  }
}
