// `gputrain profile --step`: real training steps split into data wait, copy and compute, with the
// GPU's utilisation: "is my GPU starving?"
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "gputrain/core/units.hpp"
#include "gputrain/device/utilization.hpp"
#include "gputrain/profile/gpu_span_timer.hpp"
#include "gputrain/profile/loader_sweep.hpp"
#include "gputrain/profile/step_verdict.hpp"
#include "gputrain/train/trainer.hpp"
#include "modes.hpp"

namespace gputrain::tools::profile {

namespace {

// The timed windows' figures, read back from the run's metrics.jsonl (one record per window).
struct StepFigures {
  std::int64_t steps = 0;
  double step_seconds = 0, data_seconds = 0, samples_per_second = 0;
};

StepFigures timed_windows(const std::filesystem::path& metrics, std::int64_t first_timed_step) {
  StepFigures f;
  std::ifstream in(metrics);
  std::string line;
  int windows = 0;
  std::int64_t previous = 0;
  while (std::getline(in, line)) {
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || record.value("kind", "") != "step") continue;
    const auto step = record.value("step", std::int64_t{0});
    if (step > first_timed_step) {  // windows wholly after the warm-up
      f.steps += step - previous;
      f.data_seconds += record.value("data_seconds", 0.0);
      f.step_seconds += record.value("data_seconds", 0.0) + record.value("compute_seconds", 0.0);
      f.samples_per_second += record.value("samples_per_second", 0.0);
      ++windows;
    }
    previous = step;
  }
  if (windows > 0) {  // per step (each window's figures already are), averaged over the windows
    f.data_seconds /= windows;
    f.step_seconds /= windows;
    f.samples_per_second /= windows;
  }
  return f;
}

// The probe runs' folders are removed when they end; one whose process was killed (Ctrl-C, a
// time limit) is removed by the next --step, once no process of its id is left.
void remove_folders_of_killed_probes(const std::filesystem::path& temp) {
  const std::string prefix = "gputrain-profile-step-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(temp, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const auto pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (::kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove_all(entry.path(), ec);
  }
}

// Removes the probe run's folder however profile_steps ends (a step that fails included).
struct FolderRemover {
  std::filesystem::path path;
  ~FolderRemover() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

int profile_steps(train::Config config, const train::RunDevice& run, int steps, bool json) {
  // The first window is warm-up (cuDNN autotuning, the allocator growing its pool, first-use
  // library loads): it is run, and neither timed nor sampled.
  const std::int64_t window = std::min(steps, 10);
  const std::int64_t timed = (steps + window - 1) / window * window;
  config.train.max_steps = window + timed;
  config.train.epochs = std::max<std::int64_t>(config.train.epochs, 1000000);  // steps decide
  config.train.max_time = 0;  // the config's time budget is for training, not for this measurement
  // Everything the probe run writes goes to a folder of its own, removed after: never into the
  // config's run or checkpoint folders, whose checkpoints keep_last would otherwise rotate away.
  const auto temp = std::filesystem::temp_directory_path();
  remove_folders_of_killed_probes(temp);
  config.logging.dir = (temp / ("gputrain-profile-step-" + std::to_string(::getpid()))).string();
  const FolderRemover remover{config.logging.dir};
  config.checkpoint.dir.clear();
  config.logging.progress = "off";
  config.logging.tensorboard = false;
  config.logging.jsonl = true;
  config.logging.every_steps = window;
  config.checkpoint.every_steps = 0;
  config.checkpoint.every_epochs = 0;
  config.checkpoint.resume = "never";
  config.checkpoint.best_metric = "none";
  std::unique_ptr<device::UtilizationSampler> sampler;
  std::unique_ptr<gputrain::profile::GpuSpanTimer> feed_timer;  // the feed, timed on the GPU
  std::ostringstream notes;
  train::TrainerOptions options;
  options.console = &notes;
  // A large model on the CPU takes seconds a step: how far the steps are, every 5 s.
  auto last_said = std::chrono::steady_clock::now();
  const auto say_progress = [&, total = config.train.max_steps](std::int64_t step) {
    if (std::chrono::steady_clock::now() - last_said < std::chrono::seconds(5) || step == total) return;
    last_said = std::chrono::steady_clock::now();
    std::cerr << "profile --step: step " << step << " of " << total << (step <= window ? " (warm-up)" : " (timed)") << "\n";
  };
  options.after_step = say_progress;
  if (run.device.is_cuda()) {
    options.after_step = [&](std::int64_t step) {
      say_progress(step);
      if (step != window) return;
      sampler = std::make_unique<device::UtilizationSampler>(static_cast<unsigned>(run.device.index()));
      feed_timer = std::make_unique<gputrain::profile::GpuSpanTimer>(run.device);
    };
    options.before_batch = [&] {
      if (feed_timer) feed_timer->begin();
    };
    options.on_batch = [&](const data::Batch&) {
      if (feed_timer) feed_timer->end();
    };
  }
  train::Trainer trainer(config, options);
  const auto result = trainer.fit();
  std::optional<double> utilisation;  // percent; none without a GPU or NVML
  if (sampler) utilisation = sampler->stop();
  std::optional<double> gpu_wait;     // seconds per step; none on the CPU
  if (feed_timer && feed_timer->spans() > 0) gpu_wait = feed_timer->seconds() / static_cast<double>(feed_timer->spans());
  const auto figures = timed_windows(std::filesystem::path(config.logging.dir) / "metrics.jsonl", window);
  const double per_step = figures.step_seconds, wait = figures.data_seconds, compute = per_step - wait;
  const double stall = per_step > 0 ? 100.0 * wait / per_step : 0;
  std::optional<double> gpu_stall;
  if (gpu_wait) gpu_stall = per_step > 0 ? 100.0 * *gpu_wait / per_step : 0;
  // The copy to the GPU overlaps compute on a side stream; its share is estimated from the bytes
  // of a batch and the pinned-copy ceiling measured here.
  const double ceiling = gputrain::profile::measure_pinned_copy_gbps(run.device);
  const auto batch_bytes = static_cast<std::uint64_t>(result.sample_bytes * result.batch_size * config.train.grad_accum);
  const double copy = run.device.is_cuda() && result.data_cache != "vram" && ceiling > 0 ? static_cast<double>(batch_bytes) / (ceiling * 1e9) : 0;
  // On a GPU, the GPU's own account of its wait decides: the host's also holds launches that
  // blocked on a full queue, which is compute, not data.
  const auto verdict = gputrain::profile::judge_step(gpu_stall.value_or(stall), utilisation);
  if (json) {
    nlohmann::json out = {{"schema", "gputrain.profile.step/1"}, {"device", run.device.str()}, {"warmup_steps", window},
                          {"steps", figures.steps}, {"batch_size", result.batch_size}, {"data_cache", result.data_cache},
                          {"step_seconds", per_step}, {"data_wait_seconds", wait}, {"compute_seconds", compute},
                          {"h2d_copy_seconds_estimate", copy}, {"data_stall_percent", stall},
                          {"samples_per_second", figures.samples_per_second}, {"pinned_copy_gbps", ceiling},
                          {"verdict", gputrain::profile::to_string(verdict)}};
    const auto or_null = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    out["gpu_data_wait_seconds"] = or_null(gpu_wait);
    out["gpu_data_stall_percent"] = or_null(gpu_stall);
    out["gpu_utilization_percent"] = or_null(utilisation);
    std::cout << out.dump(2) << "\n";
    return int(ExitCode::ok);
  }
  std::printf("%lld training steps of %s on %s after %lld warm-up steps, batch %lld, data.cache %s\n",
              static_cast<long long>(figures.steps), result.model.c_str(), run.device.str().c_str(),
              static_cast<long long>(window), static_cast<long long>(result.batch_size), result.data_cache.c_str());
  std::printf("  per step            %9.2f ms\n", per_step * 1e3);
  std::printf("  waiting for data    %9.2f ms  (%s %% of the time: the data stall)\n", wait * 1e3, core::format_fixed(stall, 1).c_str());
  std::printf("  compute             %9.2f ms\n", compute * 1e3);
  if (gpu_wait)
    std::printf("  GPU waiting for data%9.2f ms  (%s %% of the step, on the GPU's clock: decides the verdict)\n", *gpu_wait * 1e3,
                core::format_fixed(*gpu_stall, 1).c_str());
  if (run.device.is_cuda())
    std::printf("  host-to-device copy %9.2f ms  (estimated: %s per step at the measured %s GB/s pinned ceiling; overlaps compute)\n",
                copy * 1e3, core::format_bytes(batch_bytes).c_str(), core::format_fixed(ceiling, 1).c_str());
  std::printf("  throughput          %9s samples/s\n", core::format_fixed(figures.samples_per_second, 0).c_str());
  if (utilisation)
    std::printf("  GPU utilisation     %9s %%  (NVML, sampled every 100 ms)\n", core::format_fixed(*utilisation, 0).c_str());
  else if (sampler)
    std::printf("  GPU utilisation         n/a  (%s)\n", sampler->unavailable().c_str());
  std::printf("  verdict: %s\n", gputrain::profile::advice(verdict).c_str());
  return int(ExitCode::ok);
}

}  // namespace gputrain::tools::profile
