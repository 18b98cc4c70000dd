// gputrain profile: what a config needs from this box. By default it sweeps the data loader
// (threads, pinning, prefetch, cache) and prints the fastest setting; --step splits real training
// steps into data wait and compute; --memory prints the memory model of one training step;
// --batch finds the micro-batch `train.batch_size: auto` would pick, without training.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "command.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/device/utilization.hpp"
#include "gputrain/profile/loader_sweep.hpp"
#include "gputrain/sizing/auto_workers.hpp"
#include "gputrain/train/batch_size.hpp"
#include "gputrain/train/trainer.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/run_setup.hpp"

using namespace gputrain;

namespace {

std::string bytes(double value) { return core::format_bytes(static_cast<std::uint64_t>(value < 0 ? 0 : value)); }

std::string probe_list(const std::vector<sizing::ProbePoint>& probes) {
  std::string out;
  for (const auto& p : probes) {
    out += (out.empty() ? "" : ", ") + std::to_string(p.batch) + " ";
    out += p.fits ? "peak " + core::format_bytes(p.peak) + " in " + core::format_fixed(p.seconds, 2) + " s" : "out of memory";
  }
  return out;
}

nlohmann::json probes_json(const std::vector<sizing::ProbePoint>& probes) {
  auto out = nlohmann::json::array();
  for (const auto& p : probes) out.push_back({{"batch", p.batch}, {"fits", p.fits}, {"peak_bytes", p.peak}, {"seconds", p.seconds}});
  return out;
}

void print_row(const std::string& name, const std::string& value, const std::string& note = "") {
  std::printf("  %-22s %12s%s%s\n", name.c_str(), value.c_str(), note.empty() ? "" : "   ", note.c_str());
}

int profile_memory(const train::Config& config, const train::RunDevice& run, const train::ProbeData& probe, std::uint64_t data_bytes,
                   bool json) {
  const auto estimate = train::estimate_model_memory(config, run.device, probe);
  const auto& m = estimate.model;
  const std::int64_t predicted = estimate.fitted ? m.largest_batch(config.sizing.target_fraction) : 0;
  if (json) {
    nlohmann::json out = {{"device", run.device.str()}, {"device_name", run.name}, {"model", config.model.name},
                          {"parameters", estimate.parameter_count}, {"precision", train::to_string(config.train.precision)},
                          {"optimizer", config.optimizer.name}, {"parameter_bytes", m.known.parameters},
                          {"gradient_bytes", m.known.gradients}, {"optimizer_state_bytes", m.known.optimizer_state},
                          {"data_bytes", data_bytes}, {"resident_bytes", m.resident}, {"fitted", estimate.fitted},
                          {"limit_bytes", m.limit}, {"limit_source", m.limit_source}, {"probes", probes_json(estimate.probes)}};
    if (estimate.fitted) {
      out["fixed_bytes"] = m.fixed;
      out["per_sample_bytes"] = m.per_sample;
      out["workspace_bytes"] = m.workspace();
      out["predicted_largest_batch"] = predicted;
    }
    std::cout << out.dump(2) << "\n";
    return int(ExitCode::ok);
  }
  std::printf("memory of one training step: %s (%.2f M parameters), %s, %s, on %s (%s)\n", config.model.name.c_str(),
              static_cast<double>(estimate.parameter_count) / 1e6, train::to_string(config.train.precision).c_str(),
              config.optimizer.name.c_str(), run.device.str().c_str(), run.name.c_str());
  print_row("parameters", core::format_bytes(m.known.parameters));
  print_row("gradients", core::format_bytes(m.known.gradients));
  print_row("optimizer state", core::format_bytes(m.known.optimizer_state),
            config.optimizer.name == "sgd" ? (config.optimizer.momentum > 0 ? "sgd: one momentum buffer" : "plain sgd: none")
                                           : config.optimizer.name + ": two moments");
  print_row("dataset", core::format_bytes(data_bytes), "training and validation samples (on the device with data.cache vram)");
  if (!estimate.fitted) {
    std::printf("  no fit: the whole dataset fitted in one step (%s)\n", probe_list(estimate.probes).c_str());
    return int(ExitCode::ok);
  }
  print_row("workspace", core::format_bytes(m.workspace()), "allocator and library workspaces, temporaries");
  print_row("fixed part", bytes(m.fixed), "peak at batch 0 (fitted)");
  print_row("per sample", bytes(m.per_sample), "activations and their gradients (fitted)");
  print_row("limit", core::format_bytes(m.limit), m.limit_source);
  std::printf("  peak(batch) = %s + %s x batch, from probes: %s\n", bytes(m.fixed).c_str(), bytes(m.per_sample).c_str(),
              probe_list(estimate.probes).c_str());
  std::printf("  largest batch at %s%% of the memory left (sizing.target_fraction): %lld before rounding; "
              "`gputrain profile --batch` confirms it with real steps\n",
              core::format_fixed(config.sizing.target_fraction * 100, 0).c_str(), static_cast<long long>(predicted));
  return int(ExitCode::ok);
}

int profile_batch(const train::Config& config, const train::RunDevice& run, const train::ProbeData& probe, bool exhaustive, bool json) {
  const auto choice = train::find_batch_size(config, run.device, run.name, probe, "");
  const auto options = train::batch_search_options(config, probe.dataset_size);
  train::ExhaustiveResult truth;
  if (exhaustive) truth = train::find_largest_fitting_batch(config, run.device, probe, choice.search.memory_batch, options.max_batch);
  if (json) {
    nlohmann::json out = {{"device", run.device.str()}, {"device_name", run.name}, {"model", config.model.name},
                          {"batch", choice.batch}, {"memory_batch", choice.search.memory_batch},
                          {"probe_steps", choice.search.probes.size()}, {"memory_probe_steps", choice.search.memory_probes},
                          {"probes", probes_json(choice.search.probes)}, {"seconds", choice.seconds},
                          {"reason", choice.search.reason}, {"limit_bytes", choice.budget.limit},
                          {"limit_source", choice.budget.limit_source}, {"max_batch", options.max_batch}};
    if (exhaustive) {
      out["largest_fitting_batch"] = truth.largest;
      out["exhaustive_steps"] = truth.steps;
    }
    std::cout << out.dump(2) << "\n";
    return int(ExitCode::ok);
  }
  std::printf("batch size for %s on %s (%s): %lld\n", config.model.name.c_str(), run.device.str().c_str(), run.name.c_str(),
              static_cast<long long>(choice.batch));
  std::printf("  why: %s\n", choice.search.reason.c_str());
  std::printf("  %zu probe steps in %s s: %s\n", choice.search.probes.size(), core::format_fixed(choice.seconds, 2).c_str(),
              probe_list(choice.search.probes).c_str());
  std::printf("  memory limit: %s (%s)\n", core::format_bytes(choice.budget.limit).c_str(), choice.budget.limit_source.c_str());
  if (exhaustive)
    std::printf("  exhaustive check: the largest batch that fits is %lld (%d more steps); the search found %s%% of it\n",
                static_cast<long long>(truth.largest), truth.steps,
                core::format_fixed(100.0 * static_cast<double>(choice.search.memory_batch) / static_cast<double>(truth.largest), 1).c_str());
  std::printf("  use it: --set train.batch_size=%lld, or train.batch_size: auto (remembered in the run directory)\n",
              static_cast<long long>(choice.batch));
  return int(ExitCode::ok);
}


struct SweepFlags {
  bool json = false, csv = false;
  std::string plot;
  int repeats = 3, batches = 30;
  std::vector<int> workers;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UsageError("cannot write '" + path + "'", "check that its folder exists and is writable");
}

int profile_loader(const train::Config& config, const train::RunDevice& run, const train::RunData& data, const SweepFlags& flags) {
  const auto system = device::collect_system_info();
  profile::SweepOptions options;
  options.workers = flags.workers.empty() ? profile::worker_counts(system.usable_cores) : flags.workers;
  options.batch_size = config.train.batch_size.value_or(64);
  options.repeats = flags.repeats;
  options.batches = flags.batches;
  options.seed = static_cast<std::uint64_t>(config.train.seed);
  // The caches are tried when they fit (the step's own memory is not counted here: --step and
  // training decide with it).
  data::CacheFigures figures;
  (void)train::plan_data_cache(config, data, run.device, 0, &figures);
  figures.in_memory = false;  // measure the in-memory cache as a setting of its own
  if (data::plan_cache("auto", figures).mode == data::CacheMode::vram) options.caches.push_back(data::CacheMode::vram);
  if (run.device.is_cuda() && figures.dataset_bytes + data::cache_headroom(figures.host_free_bytes) <= figures.host_free_bytes)
    options.caches.push_back(data::CacheMode::ram);
  const bool quiet = flags.json || flags.csv;
  if (!quiet)
    std::cerr << "sweeping the loader over " << data.sources.train->description() << " on " << run.device.str() << " ("
              << options.workers.size() << " thread counts, " << options.repeats << " repeats each)\n";
  const auto sweep = profile::sweep_loader(data.sources.train, run.device, options, [&](const profile::SweepResult& r, std::size_t done, std::size_t total) {
    if (!quiet)
      std::cerr << "  [" << done << "/" << total << "] workers " << r.setting.workers << ", pin " << (r.setting.pin_memory ? "on" : "off")
                << ", prefetch " << r.setting.prefetch << ", cache " << data::to_string(r.setting.cache) << ": "
                << core::format_fixed(r.samples_per_second, 0) << " samples/s\n";
  });
  if (!flags.plot.empty()) {
    const auto ext = std::filesystem::path(flags.plot).extension().string();
    if (ext != ".svg") throw UsageError("--plot writes SVG; '" + flags.plot + "' is not a .svg file", "e.g. --plot loader.svg (convert it with any SVG tool)");
    write_file(flags.plot, profile::sweep_svg(sweep));
    if (!quiet) std::cerr << "chart written to " << flags.plot << "\n";
  }
  std::cout << (flags.json ? profile::sweep_json(sweep) : flags.csv ? profile::sweep_csv(sweep) : profile::sweep_table(sweep));
  return int(ExitCode::ok);
}

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
  const double ceiling = profile::measure_pinned_copy_gbps(run.device);
  std::uint64_t batch_bytes = 0;
  {
    auto resolved = config;
    const auto data = train::open_data(resolved);
    const auto& layout = data.sources.train->layout();
    batch_bytes = static_cast<std::uint64_t>((layout.input_bytes() + layout.target_bytes()) * result.batch_size * config.train.grad_accum);
  }
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gputrain profile: how to feed this box, measured on your data and model.\n\n"
               "  (default)  sweep the data loader: loader threads 0, 1, 2, 4, ... up to the usable cores,\n"
               "             pinned staging on/off (GPU), prefetch 1/2/4, and the caches that fit (vram,\n"
               "             ram); warm-up batches, then timed repeats, medians. Prints a table with the\n"
               "             fastest marked and the YAML lines to paste.\n"
               "  --step     run a few real training steps and split each into data wait, host-to-device\n"
               "             copy and compute, with the data stall and the GPU's utilisation (NVML):\n"
               "             \"is my GPU starving?\"\n"
               "  --memory   the memory model of one training step: parameters, gradients, optimizer state,\n"
               "             dataset, workspace, and the bytes each sample adds (peak = fixed + per_sample x\n"
               "             batch, fitted through the large probe steps of the --batch search)\n"
               "  --batch    the micro-batch `train.batch_size: auto` picks (a few probe steps, no training);\n"
               "             --exhaustive also finds the true largest batch by bisection, to check the search\n\n"
               "Without a config, --source/--path/--labels describe the data (the sweep needs no model).\n"
               "--max-memory 8GiB caps memory as a smaller GPU (or machine) would, so you can plan for one.\n"
               "docs/profiling.md explains the sweep and its JSON; docs/memory.md the memory model.\n\n"
               "Exit codes: 0 done, 1 the model does not fit even at batch 1, 2 invalid config or usage,\n"
               "3 no usable device.\n\n"
               "Examples:\n"
               "  gputrain profile configs/resnet18-cifar.yaml\n"
               "  gputrain profile --source image_folder --path data/train --set data.image_size=[128,128] --plot loader.svg\n"
               "  gputrain profile --step configs/resnet18-cifar.yaml\n"
               "  gputrain profile --batch configs/resnet18-cifar.yaml --max-memory 8GiB\n"
               "  gputrain profile --memory configs/mlp.yaml --set train.precision=bf16-mixed --json",
               "gputrain profile"};
  train::ConfigSources sources;
  bool memory_mode = false, batch_mode = false, step_mode = false, exhaustive = false;
  SweepFlags sweep;
  int steps = 50;
  std::string max_memory, source, path, labels;
  app.add_option("config", sources.files, "YAML config files; later files override earlier ones")->check(CLI::ExistingFile);
  app.add_flag("--memory", memory_mode, "print the memory model of one training step");
  app.add_flag("--batch", batch_mode, "find the micro-batch batch_size: auto would pick");
  app.add_flag("--step", step_mode, "time real training steps: data wait, copy, compute, GPU utilisation");
  app.add_option("--steps", steps, "with --step: how many steps (default 50)")->check(CLI::Range(2, 100000));
  app.add_flag("--exhaustive", exhaustive, "with --batch: also bisect for the true largest batch (more steps)");
  app.add_option("--source", source, "without a config: data.source (npy, npz, safetensors, csv, mnist, cifar10, image_folder)");
  app.add_option("--path", path, "without a config: data.path");
  app.add_option("--labels", labels, "without a config: data.labels");
  app.add_option("--workers", sweep.workers, "sweep only these loader thread counts, e.g. --workers 0 2 4")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", sweep.repeats, "timed repeats per setting (default 3; the median is reported)")->check(CLI::Range(1, 50));
  app.add_option("--batches", sweep.batches, "timed batches per repeat (default 30, fewer after 2 s)")->check(CLI::Range(1, 100000));
  app.add_flag("--json", sweep.json, "print JSON instead of text");
  app.add_flag("--csv", sweep.csv, "sweep: print CSV, one row per setting");
  app.add_option("--plot", sweep.plot, "sweep: also write an SVG chart of samples/s by thread count")->type_name("FILE.svg");
  app.add_option("--set", sources.overrides, "override one key, e.g. --set train.precision=bf16-mixed (repeatable)")->type_name("KEY=VALUE");
  app.add_option("--max-memory", max_memory, "cap device memory, e.g. 8GiB (same as --set device.max_memory=...)")
      ->type_name("SIZE")->envname("GPUTRAIN_MAX_MEMORY");
  tools::add_logging_options(app);

  return tools::run_command(app, argc, argv, [&] {
    if (int(memory_mode) + int(batch_mode) + int(step_mode) > 1)
      throw UsageError("choose one of --memory, --batch and --step (or none, for the loader sweep)", "e.g. gputrain profile --step CONFIG.yaml");
    if (exhaustive && !batch_mode) throw UsageError("--exhaustive goes with --batch", "gputrain profile --batch --exhaustive CONFIG.yaml");
    if (sweep.json && sweep.csv) throw UsageError("--json or --csv, not both", "pick one output format");
    if (sources.files.empty() && path.empty() && source.empty())
      throw UsageError("no config and no data to profile", "give a config file, or --source and --path (see --help)");
    if (!source.empty()) sources.overrides.push_back("data.source=" + source);
    if (!path.empty()) sources.overrides.push_back("data.path=" + path);
    if (!labels.empty()) sources.overrides.push_back("data.labels=" + labels);
    if (!max_memory.empty()) sources.overrides.push_back("device.max_memory=" + max_memory);
    auto config = train::load_config(sources);
    const auto run = train::prepare_device(config);
    for (const auto& note : run.notes) std::cerr << "note: " << note << "\n";
    if (step_mode) return profile_steps(config, run, steps, sweep.json);
    const auto data = train::open_data(config);
    if (!memory_mode && !batch_mode) return profile_loader(config, run, data, sweep);
    const auto samples = train::probe_samples(data, run.device);
    const std::uint64_t data_bytes = train::dataset_bytes(data);
    // What training will do: with the data cached in GPU memory, the batch gets what is left.
    const auto plan = train::plan_data_cache(config, data, run.device, 0);
    const train::ProbeData probe{samples, data.transform, data.sources.train->size(),
                                 plan.mode == data::CacheMode::vram && run.device.is_cuda() ? data_bytes : 0};
    return memory_mode ? profile_memory(config, run, probe, data_bytes, sweep.json) : profile_batch(config, run, probe, exhaustive, sweep.json);
  });
}
