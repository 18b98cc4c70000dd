// gputrain train CONFIG.yaml: train a model from YAML configs, as fast as the box allows.
#include <unistd.h>

#include <iostream>

#include "command.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/dist/launcher.hpp"
#include "gputrain/dist/rank_environment.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/evaluation.hpp"
#include "gputrain/train/fit_summary.hpp"
#include "gputrain/train/trainer.hpp"
#include "help.hpp"
#include "launch_options.hpp"
#include "text_options.hpp"

using namespace gputrain;

namespace {

// --evaluate: the weights measured on the validation data; rank 0 reports the sums.
int evaluate_weights(const train::Config& config, train::TrainerOptions options, const std::string& weights, bool json) {
  options.evaluate_only = true;
  train::Trainer trainer(config, options);
  const auto result = trainer.evaluate(weights);
  if (result.rank != 0) return int(ExitCode::ok);
  for (const auto& line : train::evaluation_lines(result)) std::cerr << core::printable(line) << "\n";  // class names from data
  if (json) std::cout << train::evaluation_json(result) << "\n";
  return int(ExitCode::ok);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{tools::kTrainHelp, "gputrain train"};
  train::ConfigSources sources;
  bool print_config = false;
  app.add_option("config", sources.files, "YAML config files; later files override earlier ones")
      ->check(tools::required_value("a YAML config file, e.g. configs/quickstart.yaml"));
  app.add_option("--set", sources.overrides, "override one key, e.g. --set optimizer.lr=3e-4 (repeatable; the value is YAML)")
      ->type_name("KEY=VALUE")
      ->check(tools::required_value("KEY=VALUE, e.g. --set train.max_steps=100"));
  std::string max_memory;
  app.add_option("--max-memory", max_memory, "cap device memory as a smaller GPU would, e.g. 8GiB (= --set device.max_memory=...)")
      ->type_name("SIZE")
      ->check(tools::required_value("a size such as 8GiB, or none"))
      ->envname("GPUTRAIN_MAX_MEMORY");
  auto* print_config_flag = app.add_flag("--print-config", print_config, "print the resolved config as YAML and exit");
  tools::LaunchFlags launch;
  tools::add_launch_options(app, launch);
  std::string evaluate;
  bool json = false;
  auto* evaluate_option = app.add_option("--evaluate", evaluate,
                                         "measure these weights (a checkpoint .pt, model.safetensors, or a state_dict torch.save wrote) on "
                                         "the validation data; no training")
                              ->type_name("WEIGHTS")
                              ->check(tools::required_value("a weights file, e.g. runs/NAME/checkpoints/best.pt"));
  app.add_flag("--json", json, "with --evaluate: print the figures as one JSON object on stdout")->needs(evaluate_option);
  print_config_flag->excludes(evaluate_option);  // it would print the config and evaluate nothing
  tools::add_logging_options(app);

  const int code = tools::run_command(
      app, argc, argv,
      [&] {
        // A bare `gputrain train` is someone finding their way, not a request for a run on the defaults.
        if (sources.files.empty() && sources.overrides.empty() && max_memory.empty() && !launch.any() && !print_config)
          throw UsageError("no config given: gputrain train CONFIG.yaml [--set KEY=VALUE ...]",
                           "try gputrain train configs/quickstart.yaml (configs/ holds ready configs; docs/getting-started.md walks "
                           "through a first run); --set alone trains on the built-in defaults");
        if (!max_memory.empty()) sources.flags.push_back({"--max-memory/GPUTRAIN_MAX_MEMORY", "device.max_memory", {max_memory}});
        launch.add_settings(sources);
        const auto config = train::load_config(sources);
        if (print_config) {
          std::cout << train::to_yaml(config);
          return int(ExitCode::ok);
        }
        const auto& d = config.distributed;
        if (const auto rank = dist::read_rank_environment(); rank && rank->world_size > 1)
          tools::refuse_configs_read_once(sources.files, "each of the " + std::to_string(rank->world_size) + " ranks reads it itself");
        if (dist::starts_ranks_here(static_cast<int>(d.nproc_per_node), static_cast<int>(d.nnodes))) {
          tools::refuse_configs_read_once(sources.files, "the ranks this command starts read it again");
          // Said once, before any rank starts, rather than by every rank (Trainer::evaluate checks it too).
          if (!evaluate.empty()) train::check_weights_file(evaluate);
          return tools::launch_ranks(config, argc, argv);
        }
        core::install_stop_handlers();
        train::TrainerOptions options;
        options.console_is_terminal = isatty(STDERR_FILENO) != 0;
        if (!evaluate.empty()) return evaluate_weights(config, options, evaluate, json);
        train::Trainer trainer(config, options);
        const auto result = trainer.fit();
        if (result.rank != 0) return int(result.interrupted ? ExitCode::interrupted : ExitCode::ok);  // rank 0 reports
        if (result.interrupted) {
          std::cerr << "interrupted after step " << result.steps << "; checkpoint " << result.last_checkpoint
                    << "\n  resume: run the same command again (checkpoint.resume: auto)\n";
          return int(ExitCode::interrupted);
        }
        std::cerr << core::printable(train::fit_summary(result, config, trainer.device() != "cpu"));
        return int(ExitCode::ok);
      },
      train::flag_as_setting);
  // A failed MPI rank takes the whole job down at once (mpirun names it), instead of leaving the
  // others to wait out their timeout in a collective this rank will never join.
  if (code != int(ExitCode::ok) && code != int(ExitCode::interrupted)) dist::end_failed_run(code);
  return code;
}
