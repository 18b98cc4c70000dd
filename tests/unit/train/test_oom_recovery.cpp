// The OOM handler and auto batch size inside real training runs on the CPU, under the CPU
// memory cap (device.max_memory), which raises the same typed error a GPU does.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gputrain/core/stop_signal.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/memory/oom_guard.hpp"
#include "gputrain/train/batch_size.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

namespace {

struct CapReset {
  ~CapReset() { memory::set_cpu_memory_cap(0); }
};

// No dropout: a step split into micro-batches then computes the same gradient up to rounding.
// Activations outweigh the parameters (a split step holds one extra gradient-sized temporary
// while it accumulates), as they do in the models people run out of memory with.
Config oom_run(const std::string& name, std::vector<std::string> overrides = {}) {
  const auto dir = fs::temp_directory_path() / ("gputrain-oom-" + name);
  fs::remove_all(dir);
  std::vector<std::string> all{"model.name=mlp",
                               "model.hidden=[128, 128]",
                               "data.shape=[64]",
                               "data.classes=4",
                               "data.samples=2048",
                               "data.val_samples=0",
                               "checkpoint.best_metric=none",
                               "train.epochs=2",
                               "train.batch_size=256",
                               "train.deterministic=true",
                               "optimizer.name=sgd",
                               "optimizer.lr=0.05",
                               "device=cpu",
                               "logging.progress=off",
                               "logging.every_steps=1",
                               "logging.tensorboard=false",
                               "logging.dir=" + dir.string()};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_config({{}, all, ""});
}

NamedTensors state_of(Trainer& trainer) {
  NamedTensors copy;
  for (const auto& [name, t] : trainer.model().named_state()) copy.emplace_back(name, t.clone());
  return copy;
}

// CPU bytes a steady-state training step at `batch` needs at its peak, above what is allocated
// at the step boundary (the counting allocator is exact and the run deterministic, so the same
// step needs exactly this much inside a longer run).
std::uint64_t step_peak(std::int64_t batch) {
  std::uint64_t boundary = 0, peak = 0;
  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t step) {
    if (step == 1) {
      boundary = memory::cpu_memory_stats().allocated;  // optimizer state now exists, as later on
      memory::reset_cpu_peak();
    } else if (step == 2) {
      peak = memory::cpu_memory_stats().peak;
    }
  };
  Trainer trainer(oom_run("peak-" + std::to_string(batch), {"train.max_steps=3", "train.batch_size=" + std::to_string(batch)}), options);
  trainer.fit();
  return peak - boundary;
}

}  // namespace

TEST(OomRecovery, AnOomMidEpochIsSurvivedWithTheSameSamplesStepsAndWeights) {
  CapReset reset;
  const auto full = step_peak(256), half = step_peak(128);
  ASSERT_GT(full, half);
  std::cerr << "step peaks above the boundary: " << full << " at 256, " << half << " at 128\n";

  Trainer reference(oom_run("reference"), test_support::quiet_trainer());
  const auto expected = reference.fit();
  const auto expected_state = state_of(reference);

  auto options = test_support::quiet_trainer();
  options.after_step = [&](std::int64_t step) {
    // From step 4 on, 256 samples no longer fit; 128 do.
    if (step == 3) memory::set_cpu_memory_cap(memory::cpu_memory_stats().allocated + (full + half) / 2);
  };
  const auto config = oom_run("capped");
  Trainer capped(config, options);
  const auto result = capped.fit();
  memory::set_cpu_memory_cap(0);

  EXPECT_EQ(result.steps, expected.steps);
  EXPECT_EQ(result.samples, expected.samples);
  EXPECT_EQ(result.oom_events, 1);
  EXPECT_EQ(result.batch_size, 256);
  EXPECT_EQ(result.micro_batch, 128);
  const auto state = state_of(capped);
  ASSERT_EQ(state.size(), expected_state.size());
  for (std::size_t i = 0; i < state.size(); ++i)
    EXPECT_TRUE(at::allclose(state[i].second, expected_state[i].second, 1e-4, 1e-6)) << state[i].first;

  const auto events = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "oom");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0]["step"], 3);
  EXPECT_EQ(events[0]["old_micro_batch"], 256);
  EXPECT_EQ(events[0]["new_micro_batch"], 128);
  EXPECT_EQ(events[0]["phase"], "train");
  EXPECT_EQ(events[0]["recovered"], true);
  EXPECT_GE(events[0]["recovery_seconds"].get<double>(), 0.0);
  EXPECT_EQ(events[0]["limit_source"], "device.max_memory");
  EXPECT_GT(events[0]["memory_limit"].get<std::uint64_t>(), 0U);
  const auto steps = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "step");
  EXPECT_EQ(steps.back()["micro_batch"], 128);
  EXPECT_EQ(steps.back()["oom_events"], 1);
}

TEST(OomRecovery, ExhaustedHalvingsStopWithACheckpointAndTheFigures) {
  CapReset reset;
  auto options = test_support::quiet_trainer();
  options.after_step = [](std::int64_t step) {
    // Nothing more fits: every split fails too. The room left is for the next batch's gather from
    // the cache (256 x 64 floats and the labels), which may or may not have run yet: without it the
    // run would fail there, outside the step, when the machine is busy.
    if (step == 2) memory::set_cpu_memory_cap(memory::cpu_memory_stats().allocated + 80 * 1024);
  };
  const auto config = oom_run("exhausted", {"oom.max_halvings=2", "checkpoint.every_epochs=0"});
  Trainer trainer(config, options);
  try {
    trainer.fit();
    FAIL() << "expected OomExhaustedError";
  } catch (const memory::OomExhaustedError& e) {
    memory::set_cpu_memory_cap(0);
    const std::string message = e.what();
    EXPECT_EQ(e.exit_code(), ExitCode::failure);
    EXPECT_NE(message.find("step 3"), std::string::npos) << message;
    EXPECT_NE(message.find("micro-batch of 64"), std::string::npos) << message;  // 256 -> 128 -> 64, then no more
    EXPECT_NE(message.find("limit"), std::string::npos) << message;
  }
  // The step that failed changed nothing: the checkpoint holds the state after step 2.
  EXPECT_TRUE(fs::exists(fs::path(config.checkpoint_dir()) / "step-00000002.pt"));
  const auto events = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "oom");
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(events.back()["recovered"], false);
  // training.log ends with the error and its fix, after the line that says where to resume from.
  std::ifstream log(fs::path(config.logging.dir) / "training.log");
  std::vector<std::string> lines;
  for (std::string line; std::getline(log, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 2U);
  EXPECT_NE(lines[lines.size() - 2].find("stopped: out of memory with no smaller micro-batch allowed"), std::string::npos)
      << lines[lines.size() - 2];
  EXPECT_NE(lines.back().find("failed: out of memory"), std::string::npos) << lines.back();
  EXPECT_NE(lines.back().find("; fix: "), std::string::npos) << lines.back();
}

// An MLP whose evaluation forward holds a large temporary: validation needs far more memory than
// training, so a cap can make validation alone run out.
struct EvalHungryImpl : torch::nn::Module {
  EvalHungryImpl(std::int64_t features, std::int64_t outputs) : linear(register_module("linear", torch::nn::Linear(features, outputs))) {}
  at::Tensor forward(const at::Tensor& x) {
    const auto flat = x.flatten(1);
    if (is_training()) return linear(flat);
    // A view into a 1024x wider copy (256 KiB per sample at 64 features), alive through the layer.
    return linear(flat.repeat({1, 1024}).narrow(1, 0, flat.size(1)));
  }
  torch::nn::Linear linear;
};
TORCH_MODULE(EvalHungry);

TEST(OomRecovery, AnOomInValidationShrinksTheValidationBatchOnly) {
  CapReset reset;
  register_model("eval_hungry", [](const ModelSpec& spec) { return torch::nn::AnyModule(EvalHungry(spec.input_shape[0], spec.outputs)); });
  const std::vector<std::string> common{"model.name=eval_hungry", "data.val_samples=256", "train.epochs=1", "train.batch_size=64"};
  Trainer reference(oom_run("val-reference", common), test_support::quiet_trainer());
  const auto expected = reference.fit();

  auto overrides = common;
  const auto config = oom_run("val-capped", overrides);
  Trainer trainer(config, test_support::quiet_trainer());
  // Training needs well under 4 MiB more; validation at 64 samples needs 16 MiB, at 32 8 MiB.
  memory::set_cpu_memory_cap(memory::cpu_memory_stats().allocated + 12 * core::kMiB);
  const auto result = trainer.fit();
  memory::set_cpu_memory_cap(0);

  EXPECT_EQ(result.oom_events, 1);
  EXPECT_EQ(result.micro_batch, 64);  // training kept its micro-batch
  ASSERT_TRUE(result.last_epoch && expected.last_epoch);
  EXPECT_NEAR(*result.last_epoch->val_loss, *expected.last_epoch->val_loss, 1e-6);
  EXPECT_DOUBLE_EQ(*result.last_epoch->val_accuracy, *expected.last_epoch->val_accuracy);
  const auto events = test_support::jsonl_records(fs::path(config.logging.dir) / "metrics.jsonl", "oom");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0]["phase"], "validation");
  EXPECT_EQ(events[0]["new_micro_batch"], 32);
}

TEST(AutoBatch, UnderACapFindsNearlyTheLargestBatchAndTheRunDoesNotOom) {
  CapReset reset;
  const auto config = oom_run("auto", {"train.batch_size=auto", "data.samples=16384", "data.val_samples=512", "device.max_memory=24MiB",
                                       "train.epochs=1", "checkpoint.every_epochs=1"});
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  options.console_is_terminal = false;
  Trainer trainer(config, options);
  const auto result = trainer.fit();
  EXPECT_EQ(result.oom_events, 0);
  EXPECT_EQ(result.batch_size % 8, 0);

  std::ifstream in(fs::path(config.logging.dir) / "auto_batch.json");
  const auto stored = nlohmann::json::parse(in);
  EXPECT_EQ(stored["batch"], result.batch_size);
  EXPECT_LE(stored["probes"].size(), 4U);
  EXPECT_EQ(stored["limit_source"], "device.max_memory");

  // The truth, by bisection with real steps under the same cap.
  const auto run = prepare_device(config);
  auto resolved = config;
  const auto data = open_data(resolved);
  const auto samples = probe_samples(data, run.device);
  const ProbeData probe{samples, data.transform, data.sources.train->size()};
  const auto truth = find_largest_fitting_batch(resolved, run.device, probe, result.batch_size, probe.dataset_size);
  EXPECT_LE(result.batch_size, truth.largest);
  EXPECT_GE(result.batch_size, static_cast<std::int64_t>(0.9 * double(truth.largest)) - 8)
      << "found " << result.batch_size << ", the largest that fits is " << truth.largest;
}

// A search that takes long (a large model on the CPU) says each probe step once it has run a
// while (here at once), and a stop signal ends it after the step it is in: exit 130.
TEST(AutoBatch, ASlowSearchSaysEachProbeStepAndAStopEndsIt) {
  CapReset reset;
  const auto config = oom_run("auto-progress", {"train.batch_size=auto", "device.max_memory=48MiB"});
  const auto run = prepare_device(config);
  auto resolved = config;
  const auto data = open_data(resolved);
  const ProbeData probe{probe_samples(data, run.device), data.transform, data.sources.train->size()};
  std::ostringstream out;
  const auto choice = find_batch_size(resolved, run.device, run.name, probe, "", probe_progress(&out, std::chrono::seconds(0)));
  EXPECT_NE(out.str().find("batch_size auto: probe step 1, batch 16: peak "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("batch_size auto: probe step " + std::to_string(choice.search.probes.size()) + ", batch "), std::string::npos)
      << out.str();

  core::request_stop();
  try {
    find_batch_size(resolved, run.device, run.name, probe, "", probe_progress(nullptr));
    ADD_FAILURE() << "the search went on after a stop";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::interrupted);
    EXPECT_NE(std::string(e.what()).find("interrupted while finding batch_size auto (after probe step 1), before any training step"),
              std::string::npos)
        << e.what();
  }
  core::clear_stop_request();
}

TEST(AutoBatch, ARunInTheSameDirectoryReusesTheResult) {
  CapReset reset;
  auto config =
      oom_run("auto-remembered", {"train.batch_size=auto", "device.max_memory=48MiB", "train.max_steps=2", "logging.progress=lines"});
  std::int64_t first = 0;
  {
    Trainer trainer(config, test_support::quiet_trainer());
    first = trainer.fit().batch_size;
  }
  {  // the record: the batch, its probes, and what was held for a GPU data cache (none on the CPU)
    std::ifstream in(fs::path(config.logging.dir) / "auto_batch.json");
    const auto record = nlohmann::json::parse(in);
    EXPECT_EQ(record.at("batch").get<std::int64_t>(), first);
    EXPECT_FALSE(record.at("probes").empty());
    EXPECT_EQ(record.at("data_reserve_bytes").get<std::uint64_t>(), 0U);
  }
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  config.train.max_steps = 4;    // not memory-relevant: same key
  config.train.max_time = 3600;  // raised to train on after a run ran out of time: same key
  Trainer again(config, options);
  const auto result = again.fit();
  EXPECT_EQ(result.batch_size, first);
  EXPECT_NE(console.str().find("remembered in"), std::string::npos) << console.str();
  EXPECT_EQ(result.start_step, 2);  // resumed: the same effective batch, so the same step count

  // A memory-relevant change searches again.
  config.device.max_memory = 40 * core::kMiB;
  std::ostringstream console2;
  options.console = &console2;
  Trainer changed(config, options);
  changed.fit();  // notes reach the console when the run starts
  EXPECT_EQ(console2.str().find("remembered in"), std::string::npos) << console2.str();
  EXPECT_NE(console2.str().find("probe steps"), std::string::npos) << console2.str();
}

// The allocator's reserved peak (CUDA) is said beside the allocated one, in text and JSON; a
// probe without one (the CPU) reads as before.
TEST(AutoBatch, AProbeIsSaidWithItsReservedPeakWhereTheAllocatorHasOne) {
  sizing::ProbePoint cpu{1024, true, 3 * core::kMiB, 0, 0, 0.5};
  EXPECT_EQ(train::probe_text(cpu), "1024: peak 3.00 MiB in 0.50 s");
  EXPECT_FALSE(nlohmann::json::parse(train::probe_json(cpu)).contains("reserved_peak_bytes"));
  auto cuda = cpu;
  cuda.reserved_peak = 6 * core::kMiB;
  EXPECT_EQ(train::probe_text(cuda), "1024: peak 3.00 MiB (reserved 6.00 MiB) in 0.50 s");
  EXPECT_EQ(nlohmann::json::parse(train::probe_json(cuda)).at("reserved_peak_bytes").get<std::uint64_t>(), 6 * core::kMiB);
  EXPECT_EQ(train::probe_text(sizing::ProbePoint{2048, false, 0, 0, 0, 0}), "2048: out of memory");
  // A probe that captured its step (CUDA graphs) says its eager and captured steps' peaks apart:
  // how much more the graph takes.
  auto captured = cuda;
  captured.eager = {2 * core::kMiB, 4 * core::kMiB};
  captured.captured = {3 * core::kMiB, 6 * core::kMiB};
  EXPECT_EQ(train::probe_text(captured),
            "1024: eager step 2.00 MiB (reserved 4.00 MiB), captured step 3.00 MiB (reserved 6.00 MiB) in 0.50 s");
  const auto json = nlohmann::json::parse(train::probe_json(captured));
  EXPECT_EQ(json.at("peak_bytes").get<std::uint64_t>(), 3 * core::kMiB);
  EXPECT_EQ(json.at("eager_step").at("peak_bytes").get<std::uint64_t>(), 2 * core::kMiB);
  EXPECT_EQ(json.at("eager_step").at("reserved_peak_bytes").get<std::uint64_t>(), 4 * core::kMiB);
  EXPECT_EQ(json.at("captured_step").at("peak_bytes").get<std::uint64_t>(), 3 * core::kMiB);
  EXPECT_EQ(json.at("captured_step").at("reserved_peak_bytes").get<std::uint64_t>(), 6 * core::kMiB);
  EXPECT_FALSE(nlohmann::json::parse(train::probe_json(cuda)).contains("captured_step"));
}

// Data and model past the cap before any step: said as such, with the fix that fits the source
// (data.samples makes synthetic data smaller, and reads nothing of a file's).
TEST(OomRecovery, NoRoomForTheDataBeforeTheFirstStepNamesTheFixForItsSource) {
  CapReset reset;
  const auto refusal = [](std::vector<std::string> overrides) {
    overrides.push_back("device.max_memory=1MiB");
    try {
      Trainer trainer(oom_run("no-room", std::move(overrides)), test_support::quiet_trainer());
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of memory before the first step"), std::string::npos) << e.what();
      return e.remedy();
    }
    ADD_FAILURE() << "the run started";
    return std::string();
  };
  EXPECT_NE(refusal({"data.samples=65536"}).find("fewer samples (data.samples)"), std::string::npos);
  const auto csv = fs::temp_directory_path() / "gputrain-oom-no-room.csv";
  {
    std::ofstream out(csv);
    out << "a,b,label\n";
    for (int i = 0; i < 100000; ++i) out << i % 7 << "," << i % 5 << "," << i % 3 << "\n";
  }
  const auto remedy = refusal({"data.source=csv", "data.path=" + csv.string(), "data.labels=label"});
  EXPECT_NE(remedy.find("a smaller dataset"), std::string::npos) << remedy;
  EXPECT_EQ(remedy.find("data.samples"), std::string::npos) << remedy;
}

// The probes repeat the samples they are given: no more than a bound's worth are read (1,024
// images of 3 x 8192 x 8192 would be 192 GiB), but 3 at least (the TorchScript check's batches).
TEST(AutoBatch, TheProbesReadNoMoreSamplesThanTheirBytesAllow) {
  auto config = test_support::small_run("probe-sample-bytes");  // samples of 10 floats and a class id: 48 bytes
  const auto run = prepare_device(config);
  const auto data = open_data(config);
  EXPECT_EQ(probe_samples(data, run.device).size(), 96) << "all 96 within 256 MiB";
  EXPECT_EQ(probe_samples(data, run.device, 1024, 480).size(), 10);
  EXPECT_EQ(probe_samples(data, run.device, 1024, 1).size(), 3);
  EXPECT_EQ(probe_samples(data, run.device, 2, 1).size(), 2);
}

// Linux hands out RAM it does not have and then kills the process: a CPU run without a cap is held
// to what it holds at set-up plus 90 % of the RAM free, past which its steps get the typed OOM the
// guard splits; with device.max_memory the user's cap decides alone.
TEST(OomRecovery, ACpuRunWithoutACapIsHeldToTheFreeRamAndOneWithACapIsNot) {
  struct Reset {
    ~Reset() {
      memory::set_cpu_memory_cap(0);
      memory::set_cpu_resident_limit(0);
    }
  } reset;
  (void)prepare_device(test_support::small_run("held-to-free-ram"));
  const auto limit = memory::cpu_memory_stats().resident_limit;
  const auto rss = static_cast<std::uint64_t>(device::host_rss_bytes());
  EXPECT_GT(limit, rss);
  EXPECT_LE(limit, rss + device::read_memory_info().available());
  (void)prepare_device(test_support::small_run("held-to-free-ram", {"device.max_memory=1GiB"}));
  EXPECT_EQ(memory::cpu_memory_stats().resident_limit, 0U);
  EXPECT_EQ(memory::cpu_memory_stats().cap, core::kGiB);
}
