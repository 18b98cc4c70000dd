// `gputrain profile --step`: real training steps split into data wait, copy and compute, with the
// GPU's utilisation: "is my GPU starving?"
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "gputrain/core/units.hpp"
#include "gputrain/device/utilization.hpp"
#include "gputrain/profile/loader_sweep.hpp"
#include "gputrain/train/trainer.hpp"
#include "modes.hpp"

namespace gputrain::tools::profile {

int profile_steps(train::Config config, const train::RunDevice& run, int steps, bool json) {
  config.train.max_steps = steps;
  config.train.epochs = std::max<std::int64_t>(config.train.epochs, 1000000);  // steps decide
  config.logging.dir = (std::filesystem::temp_directory_path() / ("gputrain-profile-step-" + std::to_string(::getpid()))).string();
  config.logging.progress = "off";
  config.logging.tensorboard = false;
  config.checkpoint.every_steps = 0;
  config.checkpoint.every_epochs = 0;
  config.checkpoint.resume = "never";
  config.checkpoint.best_metric = "none";
  std::unique_ptr<device::UtilizationSampler> sampler;
  std::ostringstream notes;
  train::TrainerOptions options;
  options.console = &notes;
  train::Trainer trainer(config, options);
  if (run.device.is_cuda()) sampler = std::make_unique<device::UtilizationSampler>(static_cast<unsigned>(run.device.index()));
  const auto result = trainer.fit();
  double utilisation = -1;  // percent; negative: no sample (no GPU or no NVML)
  if (sampler) utilisation = sampler->stop().value_or(-1.0);
  std::filesystem::remove_all(config.logging.dir);
  const double per_step = result.step_seconds / std::max<std::int64_t>(1, result.steps - result.start_step);
  const double wait = result.data_seconds / std::max<std::int64_t>(1, result.steps - result.start_step);
  const double compute = per_step - wait;
  // The copy to the GPU overlaps compute on a side stream; its share is estimated from the bytes
  // of a batch and the pinned-copy ceiling measured here.
  const double ceiling = gputrain::profile::measure_pinned_copy_gbps(run.device);
  const auto batch_bytes = static_cast<std::uint64_t>(result.sample_bytes * result.batch_size * config.train.grad_accum);
  const double copy = run.device.is_cuda() && result.data_cache != "vram" && ceiling > 0 ? static_cast<double>(batch_bytes) / (ceiling * 1e9) : 0;
  if (json) {
    nlohmann::json out = {{"schema", "gputrain.profile.step/1"}, {"device", run.device.str()}, {"steps", result.steps},
                          {"batch_size", result.batch_size}, {"data_cache", result.data_cache}, {"step_seconds", per_step},
                          {"data_wait_seconds", wait}, {"compute_seconds", compute}, {"h2d_copy_seconds_estimate", copy},
                          {"data_stall_percent", result.data_stall_percent}, {"samples_per_second", result.samples_per_second},
                          {"pinned_copy_gbps", ceiling}};
    out["gpu_utilization_percent"] = utilisation >= 0 ? nlohmann::json(utilisation) : nlohmann::json(nullptr);
    std::cout << out.dump(2) << "\n";
    return int(ExitCode::ok);
  }
  std::printf("%lld training steps of %s on %s, batch %lld, data.cache %s\n", static_cast<long long>(result.steps), config.model.name.c_str(),
              run.device.str().c_str(), static_cast<long long>(result.batch_size), result.data_cache.c_str());
  std::printf("  per step            %9.2f ms\n", per_step * 1e3);
  std::printf("  waiting for data    %9.2f ms  (%s %% of the time: the data stall)\n", wait * 1e3, core::format_fixed(result.data_stall_percent, 1).c_str());
  std::printf("  compute             %9.2f ms\n", compute * 1e3);
  if (run.device.is_cuda())
    std::printf("  host-to-device copy %9.2f ms  (estimated: %s per step at the measured %s GB/s pinned ceiling; overlaps compute)\n",
                copy * 1e3, core::format_bytes(batch_bytes).c_str(), core::format_fixed(ceiling, 1).c_str());
  std::printf("  throughput          %9s samples/s\n", core::format_fixed(result.samples_per_second, 0).c_str());
  if (utilisation >= 0)
    std::printf("  GPU utilisation     %9s %%  (NVML, sampled every 100 ms)\n", core::format_fixed(utilisation, 0).c_str());
  else if (sampler)
    std::printf("  GPU utilisation         n/a  (%s)\n", sampler->unavailable().c_str());
  const bool starving = result.data_stall_percent > 10 || (utilisation >= 0 && utilisation < 70);
  std::printf("  verdict: %s\n", starving ? "the GPU is starving for data: run `gputrain profile CONFIG.yaml` for a faster loader setting, "
                                           "or data.cache: vram if the dataset fits"
                                         : "the data keeps up; the step is compute-bound");
  return int(ExitCode::ok);
}

}  // namespace gputrain::tools::profile
