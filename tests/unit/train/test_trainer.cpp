#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

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
#include "train/setup/cpu_precision.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

namespace {

using test_support::small_run;

NamedTensors final_state(Trainer& trainer) {
  NamedTensors copy;
  for (const auto& [name, t] : trainer.model().named_state()) copy.emplace_back(name, t.clone());
  return copy;
}

void expect_bit_identical(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(at::equal(a[i].second, b[i].second)) << a[i].first << " differs";
  }
}

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

int count_lines(const fs::path& path, const std::string& needle) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

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
  EXPECT_EQ(count_lines(dir / "metrics.jsonl", "\"kind\":\"step\""), 7);  // steps 1, 2, 4, ..., 12
  EXPECT_EQ(count_lines(dir / "metrics.jsonl", "\"kind\":\"epoch\""), 2);
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
    EXPECT_EQ(count_lines(fs::path(config.logging.dir) / "training.log", outcome), 1) << outcome;
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
  expect_bit_identical(final_state(measured), final_state(given));
  Trainer plain(small_run("not-standardized"), test_support::quiet_trainer());
  plain.fit();
  EXPECT_FALSE(at::equal(final_state(measured).front().second, final_state(plain).front().second));

  EXPECT_EQ(count_lines(fs::path(config.logging.dir) / "training.log", "data.standardize: per-feature mean ["), 1);
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

  const auto a = final_state(measured), b = final_state(hand);
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

  EXPECT_EQ(count_lines(fs::path(config.logging.dir) / "training.log", "data.standardize_targets: per-target mean ["), 1);
  std::ifstream weights(result.weights_path, std::ios::binary);
  const std::string head((std::istreambuf_iterator<char>(weights)), std::istreambuf_iterator<char>());
  EXPECT_NE(head.find("\"data.target_mean\":\"["), std::string::npos);
  EXPECT_NE(head.find("\"data.target_std\":\"["), std::string::npos);
  // Without it, the run says the targets are large and what fixes it.
  const auto raw = run("targets-raw", (dir / "train.safetensors").string(), (dir / "val.safetensors").string(), {});
  Trainer plain(raw, test_support::quiet_trainer());
  plain.fit();
  EXPECT_EQ(count_lines(fs::path(raw.logging.dir) / "training.log", "regression targets far from unit scale"), 1);
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
  EXPECT_EQ(count_lines(fs::path(first.logging.dir) / "config.yaml", "batch_size: 16"), 1);
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

// model.init_weights starts a new run from a finished run's model.safetensors or from a gputrain
// checkpoint's weights (fine-tuning from it); a folder or a missing file is named as such.
TEST(Trainer, InitWeightsComeFromWeightsOrACheckpoint) {
  Trainer source(small_run("init-source", {"train.epochs=1"}), test_support::quiet_trainer());
  const auto result = source.fit();
  const auto trained = final_state(source);
  for (const auto& weights : {result.weights_path, result.last_checkpoint}) {
    Trainer started(small_run("init-started", {"model.init_weights=" + weights}), test_support::quiet_trainer());
    expect_bit_identical(final_state(started), trained);
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
    EXPECT_NE(e.remedy().find("--set logging.dir="), std::string::npos) << e.remedy();
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

// A run stopped mid-epoch and resumed ends with bit-identical parameters (CPU, deterministic).
TEST(Trainer, StoppedAndResumedRunMatchesAnUninterruptedOneExactly) {
  Trainer straight(small_run("straight"), test_support::quiet_trainer());
  straight.fit();
  const auto expected = final_state(straight);

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
  expect_bit_identical(final_state(second), expected);
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
  expect_bit_identical(final_state(second), final_state(alone));
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
  const auto expected = final_state(straight);
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
  expect_bit_identical(final_state(second), expected);
  const auto resumed_steps = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "step");
  ASSERT_FALSE(resumed_steps.empty());
  EXPECT_EQ(resumed_steps.back()["step"], 24);
  EXPECT_EQ(resumed_steps.back()["lr"].get<double>(), steps.back()["lr"].get<double>());
  EXPECT_LE(steps.back()["lr"].get<double>(), epoch3_lr);
}

// Accumulating two micro-batches of 8 is one step on the batch of 16 they make.
TEST(Trainer, GradientAccumulationMatchesTheLargerBatch) {
  Trainer big(small_run("accum-big", {"model.dropout=0", "train.max_steps=3"}), test_support::quiet_trainer());
  big.fit();
  Trainer accumulated(small_run("accum-small", {"model.dropout=0", "train.max_steps=3", "train.batch_size=8", "train.grad_accum=2"}),
                      test_support::quiet_trainer());
  accumulated.fit();
  const auto a = final_state(big), b = final_state(accumulated);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::allclose(a[i].second, b[i].second, 1e-5, 1e-6)) << a[i].first;
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
