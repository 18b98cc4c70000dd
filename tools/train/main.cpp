// gputrain train CONFIG.yaml: train a model from YAML configs, as fast as the box allows.
#include <unistd.h>

#include <cmath>
#include <iostream>

#include "command.hpp"
#include "launch_options.hpp"
#include "gputrain/core/duration.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/device_cache.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/dist/launcher.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/evaluation.hpp"
#include "gputrain/train/metrics.hpp"
#include "gputrain/train/trainer.hpp"

using namespace gputrain;


int main(int argc, char** argv) {
  CLI::App app{"gputrain train: train a model from YAML config files.\n\n"
               "Settings resolve as: built-in defaults < CONFIG files (later wins) < --set overrides\n"
               "< --max-memory and the launcher flags (--nproc-per-node, ...).\n"
               "Every key is in docs/configuration.md; configs/ holds ready configs.\n"
               "A run writes config.yaml, training.log, metrics.jsonl, TensorBoard events, checkpoints and\n"
               "model.safetensors to logging.dir. SIGINT/SIGTERM (and SIGHUP, SIGUSR1/2: a closed terminal, a\n"
               "scheduler's warning) finish the current step, save a checkpoint and exit 130; run the same\n"
               "command again to resume (checkpoint.resume: auto). train.max_time: 11h30m ends a run that has\n"
               "trained that long (over resumes) with a checkpoint and its weights, exit 0: inside a job's limit.\n"
               "Out of memory mid-run, a step is split into smaller micro-batches (same samples, same step);\n"
               "when no smaller one is allowed (oom.*), the run saves a checkpoint and exits 1.\n"
               "A loss that turns nan/inf stops the run (exit 1) before it checkpoints broken weights.\n"
               "train.early_stop_patience: N stops a run after N epochs without a better validation figure\n"
               "(checkpoint.best_metric) and writes the best epoch's weights; scheduler.name: plateau lowers the\n"
               "learning rate when that figure stops improving (PyTorch's ReduceLROnPlateau).\n"
               "Unbalanced classes: train.class_weights: balanced weighs the rarer ones up in the training loss,\n"
               "and checkpoint.best_metric: val_balanced_accuracy keeps best.pt by each class's accuracy averaged;\n"
               "such a run ends with each class's recall and precision on the validation data.\n"
               "--evaluate WEIGHTS measures a trained model (best.pt, a step-*.pt, model.safetensors) on the\n"
               "config's validation data instead of training: give the run's config.yaml, and a test set as\n"
               "data.val_path. Nothing is written; --json prints the figures for scripts.\n"
               "model.init_weights: a run's model.safetensors or checkpoint starts a new run from those weights\n"
               "(fine-tuning); checkpoint.resume continues the run itself.\n\n"
               "Exit codes: 0 done, 1 the run failed, 2 invalid config or usage, 3 no usable device,\n"
               "130 interrupted after a checkpoint.\n\n"
               "Examples:\n"
               "  gputrain train configs/quickstart.yaml\n"
               "  gputrain train --set data.path=X_train.npy --set data.labels=y_train.npy   (no config: the format told by the path)\n"
               "  gputrain train configs/resnet18-cifar.yaml --set train.precision=bf16-mixed --set train.max_steps=500\n"
               "  gputrain train configs/mlp.yaml --set train.batch_size=auto --max-memory 2GiB\n"
               "  gputrain train configs/mlp.yaml --print-config\n"
               "  gputrain train runs/churn/config.yaml --evaluate runs/churn/checkpoints/best.pt --set data.val_path=test.csv\n"
               "  gputrain train configs/resnet18-cifar.yaml --nproc-per-node 8      (one rank per GPU, NCCL)\n"
               "  gputrain train configs/mlp.yaml --set device=cpu --nproc-per-node 2 (CPU ranks, MPI)\n\n"
               "Distributed: run under torchrun (--no-python), srun or mpirun, or let --nproc-per-node start\n"
               "the ranks of this node (with --nnodes, --node-rank, --master-addr and --master-port, of each\n"
               "node, as torchrun does); batch_size is per rank; rank 0 writes the run directory.\n"
               "See docs/distributed.md.",
               "gputrain train"};
  train::ConfigSources sources;
  bool print_config = false;
  app.add_option("config", sources.files, "YAML config files; later files override earlier ones");
  app.add_option("--set", sources.overrides, "override one key, e.g. --set optimizer.lr=3e-4 (repeatable; the value is YAML)")->type_name("KEY=VALUE");
  std::string max_memory;
  app.add_option("--max-memory", max_memory, "cap device memory as a smaller GPU would, e.g. 8GiB (= --set device.max_memory=...)")
      ->type_name("SIZE")->envname("GPUTRAIN_MAX_MEMORY");
  app.add_flag("--print-config", print_config, "print the resolved config as YAML and exit");
  tools::LaunchFlags launch;
  tools::add_launch_options(app, launch);
  std::string evaluate;
  bool json = false;
  auto* evaluate_option = app.add_option("--evaluate", evaluate,
                                         "measure these weights (a checkpoint .pt or model.safetensors) on the validation data; no training")
                              ->type_name("WEIGHTS");
  app.add_flag("--json", json, "with --evaluate: print the figures as one JSON object on stdout")->needs(evaluate_option);
  tools::add_logging_options(app);

  const int code = tools::run_command(app, argc, argv, [&] {
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
    if (dist::starts_ranks_here(static_cast<int>(d.nproc_per_node), static_cast<int>(d.nnodes))) {
      // Said once, before any rank starts, rather than by every rank (Trainer::evaluate checks it too).
      if (!evaluate.empty()) train::check_weights_file(evaluate);
      return tools::launch_ranks(config, argc, argv);
    }
    core::install_stop_handlers();
    train::TrainerOptions options;
    options.console_is_terminal = isatty(STDERR_FILENO) != 0;
    if (!evaluate.empty()) {
      options.evaluate_only = true;
      train::Trainer trainer(config, options);
      const auto result = trainer.evaluate(evaluate);
      if (result.rank != 0) return int(ExitCode::ok);  // rank 0 reports the sums
      for (const auto& line : train::evaluation_lines(result)) std::cerr << line << "\n";
      if (json) std::cout << train::evaluation_json(result) << "\n";
      return int(ExitCode::ok);
    }
    train::Trainer trainer(config, options);
    const auto result = trainer.fit();
    if (result.rank != 0) return int(result.interrupted ? ExitCode::interrupted : ExitCode::ok);  // rank 0 reports
    if (result.interrupted) {
      std::cerr << "interrupted after step " << result.steps << "; checkpoint " << result.last_checkpoint
                << "\n  resume: run the same command again (checkpoint.resume: auto)\n";
      return int(ExitCode::interrupted);
    }
    std::cerr << "done: ";
    if (!result.early_stop_reason.empty())
      std::cerr << "stopped early after epoch " << result.epochs_done << " of " << config.train.epochs << ", ";
    if (result.time_limit_reached)
      std::cerr << "stopped at train.max_time " << core::duration_text(config.train.max_time) << " after step " << result.steps << " of "
                << result.total_steps << ", ";
    std::cerr << core::counted(result.steps, "step") << " in " << train::format_duration(result.run_seconds);
    if (result.last_loss) std::cerr << ", final loss " << core::format_fixed(*result.last_loss, 4);
    if (result.last_epoch && (result.last_epoch->val_accuracy || result.last_epoch->val_mse)) {
      const auto& e = *result.last_epoch;
      if (e.val_accuracy) std::cerr << ", val accuracy " << core::format_fixed(100 * *e.val_accuracy, 2) << "%";
      if (e.val_balanced_accuracy && result.show_balanced_accuracy)
        std::cerr << " (balanced " << core::format_fixed(100 * *e.val_balanced_accuracy, 2) << "%)";
      if (e.val_mse) std::cerr << ", val mse " << core::format_fixed(*e.val_mse, 4);  // as the epoch lines print it
      if (e.val_mae) std::cerr << ", val mae " << core::format_fixed(*e.val_mae, 4);  // in the targets' units: the one to read
      // Validation runs at epochs' ends: the figure is older than the final weights then.
      if (result.ended_inside_epoch > 0) std::cerr << " (at the end of epoch " << e.epoch + 1 << ")";
    }
    if (result.samples_per_second > 0)
      std::cerr << ", " << core::format_fixed(result.samples_per_second, 0) << " samples/s, data stall "
                << core::format_fixed(result.data_stall_percent, 1) << "%";
    if (result.oom_events > 0)
      std::cerr << ", " << result.oom_events << " out-of-memory events survived (micro-batch " << result.batch_size << " -> "
                << result.micro_batch << ")";
    if (result.skipped_samples > 0)
      std::cerr << ", " << core::counted(result.skipped_samples, "unreadable sample")
                << " skipped (named in training.log)";
    if (result.ended_inside_epoch > 0 && result.has_validation)
      std::cerr << "\n  validation: " << (result.time_limit_reached ? "train.max_time" : "train.max_steps") << " ended the run "
                << result.steps_into_epoch << " of " << result.steps_per_epoch
                << " steps into epoch " << result.ended_inside_epoch << ", before that epoch's validation";
    if (result.data_cache != "none")
      std::cerr << "\n  data: data.cache " << data::placement_text(result.data_cache, trainer.device() != "cpu")
                << ", loaded once in " << core::format_fixed(result.data_load_seconds, 2)
                << " s before the first epoch";
    if (result.gradient_buckets > 0) {
      const auto sent = result.gradient_buckets * (result.steps - result.start_step);
      std::cerr << "\n  distributed: " << core::counted(result.world_size, "rank") << ", "
                << core::counted(result.gradient_buckets, "gradient bucket") << " per step, " << result.buckets_sent_in_backward << " of " << sent
                << " sent while backward ran; steps waited " << core::format_fixed(result.gradient_wait_seconds, 3) << " s for them";
      if (result.communication_hidden_share)
        std::cerr << ", which took " << core::format_fixed(*result.communication_seconds, 3) << " s: "
                  << core::format_fixed(100 * *result.communication_hidden_share, 0) << "% hidden behind backward";
    }
    if (!result.early_stop_reason.empty()) std::cerr << "\n  early stop: " << result.early_stop_reason;
    if (result.time_limit_reached)
      std::cerr << "\n  time limit: " << core::duration_text(std::round(result.trained_seconds)) << " trained in all; "
                << result.last_checkpoint << " holds the state, so the same command with a larger train.max_time"
                << (config.checkpoint.resume == "auto" ? "" : " and checkpoint.resume: auto") << " trains on from there";
    std::cerr << "\n  weights: " << result.weights_path;
    if (result.weights_epoch > 0)
      std::cerr << " (epoch " << result.weights_epoch << "'s, the best " << config.checkpoint.best_metric << ": "
                << train::metric_text(config.checkpoint.best_metric, result.weights_metric.value_or(0.0)) << ")";
    std::cerr << "\n  run dir: " << result.run_dir << "\n";
    return int(ExitCode::ok);
  });
  // A failed MPI rank takes the whole job down at once (mpirun names it), instead of leaving the
  // others to wait out their timeout in a collective this rank will never join.
  if (code != int(ExitCode::ok) && code != int(ExitCode::interrupted)) dist::end_failed_run(code);
  return code;
}
