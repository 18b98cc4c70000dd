// The run's reporter: rank 0's sinks (console, training.log, metrics.jsonl, TensorBoard) and the
// facts about the run that each gets before the first step (RunInfo).
#include <filesystem>
#include <iostream>

#include "gputrain/train/model.hpp"
#include "train/loop/trainer_state.hpp"

namespace gputrain::train {

namespace fs = std::filesystem;

void Trainer::State::open_reporter(std::int64_t start_step) {
  if (!ranks.writer()) {  // rank 0 speaks for the run
    reporter.stay_silent();
    return;
  }
  const fs::path dir(config.logging.dir);
  std::ostream& console = options.console ? *options.console : std::cerr;
  std::string mode = config.logging.progress;
  if (mode == "auto") mode = options.console_is_terminal ? "bar" : "lines";
  std::vector<std::unique_ptr<MetricSink>> sinks;
  sinks.push_back(make_console_sink(mode, console, options.console_quiet));
  // A run file the disk refuses says so where the user looks: the console and training.log.
  const SinkWarning warn = [this](const std::string& line) { reporter.note(line); };
  sinks.push_back(make_log_file_sink((dir / "training.log").string(), warn));
  if (config.logging.jsonl) sinks.push_back(make_jsonl_sink((dir / "metrics.jsonl").string(), warn));
  if (config.logging.tensorboard) sinks.push_back(make_tensorboard_sink(dir.string(), warn));
  RunInfo info;
  info.run_dir = config.logging.dir;
  info.model = model->name();
  info.device = device.str();
  info.precision = to_string(config.train.precision);
  info.parameters = parameter_count(*model);
  info.total_steps = total_steps;
  info.steps_per_epoch = steps_per_epoch;
  info.epochs = config.train.epochs;
  info.batch_size = micro_batch;
  info.grad_accum = config.train.grad_accum;
  info.batch_size_auto = !config.train.batch_size.has_value();
  info.num_workers = num_workers;
  info.data_cache = data::to_string(placement.plan.mode);
  info.train_samples = train_size;
  info.val_samples = val_size;
  info.data_read_seconds = data.read_seconds;
  info.data_load_seconds = placement.load_seconds;
  info.setup_seconds = setup_seconds;
  info.setup_phases = setup_phases;
  info.start_step = start_step;
  info.world_size = ranks.world_size();
  info.distributed = ranks.summary();
  info.cuda_graphs = cuda_graphs;
  info.show_balanced_accuracy = shows_balanced_accuracy();
  reporter.open(std::move(sinks), info);
}

}  // namespace gputrain::train
