// `gputrain profile --memory` and `--batch`: the memory model of one step and the batch search.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "modes.hpp"

namespace gputrain::tools::profile {
namespace {

std::string bytes(double value) { return core::format_bytes(static_cast<std::uint64_t>(value < 0 ? 0 : value)); }

// "cuda:0 (NVIDIA H100 80GB HBM3)"; "cpu" alone, not "cpu (cpu)".
std::string device_text(const train::RunDevice& run) {
  const auto device = run.device.str();
  return run.name.empty() || run.name == device ? device : device + " (" + run.name + ")";
}

std::string probe_list(const std::vector<sizing::ProbePoint>& probes) {
  std::string out;
  for (const auto& p : probes) out += (out.empty() ? "" : ", ") + train::probe_text(p);
  return out;
}

nlohmann::json probes_json(const std::vector<sizing::ProbePoint>& probes) {
  auto out = nlohmann::json::array();
  for (const auto& p : probes) out.push_back(nlohmann::json::parse(train::probe_json(p)));
  return out;
}

void print_row(const std::string& name, const std::string& value, const std::string& note = "") {
  std::printf("  %-22s %12s%s%s\n", name.c_str(), value.c_str(), note.empty() ? "" : "   ", note.c_str());
}

}  // namespace

int profile_memory(const train::Config& config, const train::RunDevice& run, const train::ProbeData& probe, std::uint64_t data_bytes,
                   bool json) {
  const auto estimate = train::estimate_model_memory(config, run.device, probe, train::probe_progress(&std::cerr));
  const auto& m = estimate.model;
  const std::int64_t predicted = estimate.fitted ? m.largest_batch(config.sizing.target_fraction) : 0;
  if (json) {
    nlohmann::json out = {{"schema", "gputrain.profile.memory/1"},
                          {"device", run.device.str()},
                          {"device_name", run.name},
                          {"model", config.model_label()},
                          {"parameters", estimate.parameter_count},
                          {"precision", train::to_string(config.train.precision)},
                          {"optimizer", config.optimizer.name},
                          {"parameter_bytes", m.known.parameters},
                          {"gradient_bytes", m.known.gradients},
                          {"optimizer_state_bytes", m.known.optimizer_state},
                          {"data_bytes", data_bytes},
                          {"resident_bytes", m.resident},
                          {"fitted", estimate.fitted},
                          {"limit_bytes", m.limit},
                          {"limit_source", m.limit_source},
                          {"probes", probes_json(estimate.probes)}};
    if (estimate.fitted) {
      out["fixed_bytes"] = m.fixed;
      out["per_sample_bytes"] = m.per_sample;
      out["workspace_bytes"] = m.workspace();
      out["predicted_largest_batch"] = predicted;
      out["fitted_to_reserved_bytes"] = estimate.reserved_bytes;
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return int(ExitCode::ok);
  }
  std::printf("memory of one training step: %s (%s), %s, %s, on %s\n", config.model_label().c_str(),
              core::format_parameter_count(estimate.parameter_count).c_str(), train::to_string(config.train.precision).c_str(),
              config.optimizer.name.c_str(), device_text(run).c_str());
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
  if (estimate.reserved_bytes)
    std::printf("  fitted to the bytes the allocator reserved: a probe ran out of memory where the allocated bytes said it fits\n");
  std::printf(
      "  largest batch at %s%% of the memory left (sizing.target_fraction): %lld before rounding; "
      "`gputrain profile --batch` confirms it with real steps\n",
      core::format_fixed(config.sizing.target_fraction * 100, 0).c_str(), static_cast<long long>(predicted));
  return int(ExitCode::ok);
}

int profile_batch(const train::Config& config, const train::RunDevice& run, const train::ProbeData& probe, bool exhaustive, bool json) {
  const auto choice = train::find_batch_size(config, run.device, run.name, probe, "", train::probe_progress(&std::cerr));
  const auto options = train::batch_search_options(config, probe.dataset_size);
  train::ExhaustiveResult truth;
  if (exhaustive)
    truth = train::find_largest_fitting_batch(config, run.device, probe, choice.search.memory_batch, options.max_batch,
                                              train::probe_progress(&std::cerr));
  if (json) {
    nlohmann::json out = {{"schema", "gputrain.profile.batch/1"},
                          {"device", run.device.str()},
                          {"device_name", run.name},
                          {"model", config.model_label()},
                          {"batch", choice.batch},
                          {"memory_batch", choice.search.memory_batch},
                          {"probe_steps", choice.search.probes.size()},
                          {"memory_probe_steps", choice.search.memory_probes},
                          {"probes", probes_json(choice.search.probes)},
                          {"seconds", choice.seconds},
                          {"reason", choice.search.reason},
                          {"limit_bytes", choice.budget.limit},
                          {"limit_source", choice.budget.limit_source},
                          {"max_batch", options.max_batch}};
    if (exhaustive) {
      out["largest_fitting_batch"] = truth.largest;
      out["exhaustive_steps"] = truth.steps;
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return int(ExitCode::ok);
  }
  std::printf("batch size for %s on %s: %lld\n", config.model_label().c_str(), device_text(run).c_str(),
              static_cast<long long>(choice.batch));
  std::printf("  why: %s\n", choice.search.reason.c_str());
  std::printf("  %zu probe steps in %s s: %s\n", choice.search.probes.size(), core::format_fixed(choice.seconds, 2).c_str(),
              probe_list(choice.search.probes).c_str());
  std::printf("  memory limit: %s (%s)\n", core::format_bytes(choice.budget.limit).c_str(), choice.budget.limit_source.c_str());
  if (exhaustive)
    std::printf(
        "  exhaustive check: the largest batch that fits is %lld (%d more steps); the search found %s%% of it\n",
        static_cast<long long>(truth.largest), truth.steps,
        core::format_fixed(100.0 * static_cast<double>(choice.search.memory_batch) / static_cast<double>(truth.largest), 1).c_str());
  std::printf("  use it: --set train.batch_size=%lld, or train.batch_size: auto (remembered in the run directory)\n",
              static_cast<long long>(choice.batch));
  const auto few = train::few_steps_note(choice.batch, config.train.grad_accum, probe.dataset_size, config.data.drop_last);
  if (!few.empty()) std::printf("  note: %s\n", few.c_str());
  return int(ExitCode::ok);
}

}  // namespace gputrain::tools::profile
