// gputrain profile: what a config needs from this box, measured. The flags and the choice of
// mode live here; each mode is a file of its own (modes.hpp).
#include <filesystem>
#include <iostream>

#include "command.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/core/write_error.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/profile/step_profile.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/run_setup.hpp"
#include "help.hpp"
#include "modes.hpp"
#include "number_options.hpp"
#include "output_file.hpp"
#include "text_options.hpp"

using namespace gputrain;
using namespace gputrain::tools::profile;

namespace {

// Flags that do not go together, refused before anything runs.
void refuse_mixed_flags(bool memory_mode, bool batch_mode, bool step_mode, bool exhaustive, bool trace, const SweepFlags& sweep) {
  if (trace && (memory_mode || batch_mode)) throw UsageError("--trace goes with --step", "gputrain profile --trace trace.json CONFIG.yaml");
  if (int(memory_mode) + int(batch_mode) + int(step_mode) > 1)
    throw UsageError("choose one of --memory, --batch and --step (or none, for the loader sweep)",
                     "e.g. gputrain profile --step CONFIG.yaml");
  if (exhaustive && !batch_mode) throw UsageError("--exhaustive goes with --batch", "gputrain profile --batch --exhaustive CONFIG.yaml");
  if (sweep.json && sweep.csv) throw UsageError("--json or --csv, not both", "pick one output format");
}

// --labels takes every word up to the next option, so a config named after it lands there.
void refuse_configs_as_labels(const std::vector<std::string>& labels) {
  for (const auto& label : labels) {
    const auto extension = std::filesystem::path(label).extension();
    if (extension == ".yaml" || extension == ".yml")
      throw UsageError("--labels took the config file '" + label + "' as a label",
                       "put the config first: gputrain profile " + label + " --labels ..., or end the labels with --");
  }
}

// Without a config: the data to profile, as data.source, data.path and data.labels.
void add_data_options(CLI::App& app, std::string& source, std::string& path, std::vector<std::string>& labels) {
  app.add_option(
         "--source", source,
         "without a config: data.source (" + core::join(data::file_source_names()) + "); default: the config's, else told from the path")
      ->check(tools::required_value("a data source, e.g. csv"));
  app.add_option("--path", path, "without a config: data.path")->check(tools::required_value("the data's file or folder"));
  app.add_option("--labels", labels, "without a config: data.labels (CSV: one or more label columns, --labels y1 y2)")
      ->check(tools::required_value("the labels' file or column"));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{tools::kProfileHelp, "gputrain profile"};
  train::ConfigSources sources;
  bool memory_mode = false, batch_mode = false, step_mode = false, exhaustive = false;
  SweepFlags sweep;
  int steps = 50;
  std::string max_memory, source, path, trace;
  std::vector<std::string> labels;
  app.add_option("config", sources.files, "YAML config files; later files override earlier ones")
      ->check(tools::required_value("a YAML config file, e.g. configs/quickstart.yaml"));
  app.add_flag("--memory", memory_mode, "print the memory model of one training step");
  app.add_flag("--batch", batch_mode, "find the micro-batch batch_size: auto would pick");
  app.add_flag("--step", step_mode, "time real training steps: data wait, copy, compute, GPU utilisation");
  app.add_option("--steps", steps,
                 "with --step: how many timed steps (default 50), after 10 warm-up steps (fewer when fewer are asked for)")
      ->check(tools::whole_number(2, 100000));
  app.add_option("--trace", trace,
                 "with --step (implied): also trace 5 more steps with LibTorch's profiler into this Chrome/Perfetto JSON file "
                 "(open it in ui.perfetto.dev or chrome://tracing)")
      ->type_name("FILE.json")
      ->check(tools::output_file("trace.json", {"a trace", {"{"}}));
  app.add_flag("--exhaustive", exhaustive, "with --batch: also bisect for the true largest batch (more steps)");
  add_data_options(app, source, path, labels);
  app.add_option("--workers", sweep.workers, "sweep only these loader thread counts, e.g. 0 2 4")->check(tools::whole_number(0, 1024));
  app.add_option("--repeats", sweep.repeats, "timed repeats per setting (default 3; the median is reported)")
      ->check(tools::whole_number(1, 50));
  app.add_option("--batches", sweep.batches, "timed batches per repeat (default 30, fewer after 2 s)")
      ->check(tools::whole_number(1, 100000));
  app.add_flag("--json", sweep.json, "print JSON instead of text");
  app.add_flag("--csv", sweep.csv, "sweep: print CSV, one row per setting");
  app.add_option("--plot", sweep.plot, "sweep: also write a chart of samples/s by thread count (.svg, or .png via librsvg)")
      ->type_name("FILE.svg|FILE.png")
      ->check(tools::output_file("loader.svg", {"a chart", {"<?xml", "<svg", "\x89PNG"}}));
  app.add_option("--set", sources.overrides, "override one key, e.g. --set train.precision=bf16-mixed (repeatable)")
      ->type_name("KEY=VALUE")
      ->check(tools::required_value("KEY=VALUE, e.g. --set train.max_steps=100"));
  app.add_option("--max-memory", max_memory, "cap device memory, e.g. 8GiB (same as --set device.max_memory=...)")
      ->type_name("SIZE")
      ->check(tools::required_value("a size such as 8GiB, or none"))
      ->envname("GPUTRAIN_MAX_MEMORY");
  tools::add_logging_options(app);

  const auto run_profile = [&]() -> int {
    refuse_mixed_flags(memory_mode, batch_mode, step_mode, exhaustive, !trace.empty(), sweep);
    refuse_configs_as_labels(labels);
    if (!trace.empty()) core::refuse_unwritable_file(trace, "--trace");  // before the steps, not after them
    if (sources.files.empty() && path.empty() && source.empty())
      throw UsageError("no config and no data to profile", "give a config file, or --source and --path (see --help)");
    if (!source.empty()) sources.flags.push_back({"--source", "data.source", {source}});
    if (!path.empty()) sources.flags.push_back({"--path", "data.path", {path}});
    if (!labels.empty()) sources.flags.push_back({"--labels", "data.labels", labels});
    if (!max_memory.empty()) sources.flags.push_back({"--max-memory/GPUTRAIN_MAX_MEMORY", "device.max_memory", {max_memory}});
    auto config = train::load_config(sources);
    const auto run = train::prepare_device(config);
    for (const auto& note : run.notes) std::cerr << "note: " << core::printable(note) << "\n";
    if (step_mode || !trace.empty()) {
      const auto profile = gputrain::profile::profile_steps(config, run, steps, trace);
      if (!trace.empty()) std::cerr << "trace of 5 steps after the timed ones: " << trace << " (ui.perfetto.dev or chrome://tracing)\n";
      std::cout << (sweep.json ? gputrain::profile::step_profile_json(profile) + "\n" : gputrain::profile::step_profile_text(profile));
      return int(ExitCode::ok);
    }
    const auto data = train::open_data(config);
    if (!memory_mode && !batch_mode) return profile_loader(config, run, data, sweep);
    train::check_scripted_model(config, data, run.device);
    const auto samples = train::probe_samples(data, run.device);
    const std::uint64_t data_bytes = train::dataset_bytes(data);
    // What training will do: with the data cached in GPU memory, the batch gets what is left.
    const auto plan = train::plan_data_cache(config, data, run.device, 0);
    const train::ProbeData probe{samples, data.transform, data.sources.train->size(), train::cache_reserve_bytes(data, plan, run.device)};
    return memory_mode ? profile_memory(config, run, probe, data_bytes, sweep.json)
                       : profile_batch(config, run, probe, exhaustive, sweep.json);
  };
  return tools::run_command(
      app, argc, argv,
      [&] { return sweep.json ? with_json_errors(json_schema(step_mode, memory_mode, batch_mode), run_profile) : run_profile(); },
      train::flag_as_setting);
}
