// gputrain profile: what a config needs from this box. --memory prints the memory model of one
// training step; --batch finds the micro-batch `train.batch_size: auto` would pick, without training.
#include <nlohmann/json.hpp>

#include <iostream>

#include "command.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/batch_size.hpp"
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gputrain profile: what a config needs from this box, measured with real training steps.\n\n"
               "  --memory   the memory model of one training step: parameters, gradients, optimizer state,\n"
               "             data on the device, workspace, and the bytes each sample adds (peak = fixed +\n"
               "             per_sample x batch, fitted through the large probe steps of the --batch search)\n"
               "  --batch    the micro-batch `train.batch_size: auto` picks (a few probe steps, no training);\n"
               "             --exhaustive also finds the true largest batch by bisection, to check the search\n\n"
               "--max-memory 8GiB caps memory as a smaller GPU (or machine) would, so you can plan for one.\n"
               "docs/memory.md explains the model and the search.\n\n"
               "Exit codes: 0 done, 1 the model does not fit even at batch 1, 2 invalid config or usage,\n"
               "3 no usable device.\n\n"
               "Examples:\n"
               "  gputrain profile --memory configs/resnet18-cifar.yaml\n"
               "  gputrain profile --batch configs/resnet18-cifar.yaml --max-memory 8GiB\n"
               "  gputrain profile --batch configs/mlp.yaml --set train.precision=bf16-mixed --json",
               "gputrain profile"};
  train::ConfigSources sources;
  bool memory_mode = false, batch_mode = false, exhaustive = false, json = false;
  std::string max_memory;
  app.add_option("config", sources.files, "YAML config files; later files override earlier ones")->check(CLI::ExistingFile)->required();
  app.add_flag("--memory", memory_mode, "print the memory model of one training step");
  app.add_flag("--batch", batch_mode, "find the micro-batch batch_size: auto would pick");
  app.add_flag("--exhaustive", exhaustive, "with --batch: also bisect for the true largest batch (more steps)");
  app.add_flag("--json", json, "print JSON instead of text");
  app.add_option("--set", sources.overrides, "override one key, e.g. --set train.precision=bf16-mixed (repeatable)")->type_name("KEY=VALUE");
  app.add_option("--max-memory", max_memory, "cap device memory, e.g. 8GiB (same as --set device.max_memory=...)")
      ->type_name("SIZE")->envname("GPUTRAIN_MAX_MEMORY");
  tools::add_logging_options(app);

  return tools::run_command(app, argc, argv, [&] {
    if (memory_mode == batch_mode)
      throw UsageError("choose what to profile: --memory or --batch", "e.g. gputrain profile --batch CONFIG.yaml");
    if (exhaustive && !batch_mode) throw UsageError("--exhaustive goes with --batch", "gputrain profile --batch --exhaustive CONFIG.yaml");
    if (!max_memory.empty()) sources.overrides.push_back("device.max_memory=" + max_memory);
    auto config = train::load_config(sources);
    const auto run = train::prepare_device(config);
    for (const auto& note : run.notes) std::cerr << "note: " << note << "\n";
    const auto data = train::open_data(config);
    const auto samples = train::probe_samples(data, run.device);
    const std::uint64_t data_bytes = train::dataset_bytes(data);
    // What training will do: with the data cached in GPU memory, the batch gets what is left.
    const auto plan = train::plan_data_cache(config, data, run.device, 0);
    const train::ProbeData probe{samples, data.transform, data.sources.train->size(),
                                 plan.mode == data::CacheMode::vram && run.device.is_cuda() ? data_bytes : 0};
    return memory_mode ? profile_memory(config, run, probe, data_bytes, json) : profile_batch(config, run, probe, exhaustive, json);
  });
}
