#pragma once
// The trainer's private state, shared by the files that implement Trainer: setup/trainer_setup.cpp
// (device, data, model, optimizer, sinks), loop/resume.cpp, loop/trainer.cpp (fit()), the fit
// loop (loop/fit_loop.cpp) and loop/validation.cpp. What a run does at its boundaries is not here:
// callbacks do it (loop/callbacks/); how a step runs is the StepEngine's (step/).

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/core/directory_lock.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/process_time.hpp"
#include "gputrain/dist/gradient_sync.hpp"
#include "gputrain/memory/oom_guard.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/callback.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/metrics.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "rank_group.hpp"
#include "run_context.hpp"
#include "train/report/reporter.hpp"
#include "train/setup/lone_sample.hpp"
#include "train/step/optimizer_shards.hpp"
#include "train/step/step_engine.hpp"

namespace YAML {
class Node;  // a checkpoint's config, in resume()'s checks
}  // namespace YAML

namespace gputrain::train {

using Clock = std::chrono::steady_clock;

using core::seconds_since;

// What fit() reports about the steps this process ran.
struct RunTotals {
  Clock::time_point start = Clock::now();
  double data_seconds = 0;
  double paused_seconds = 0;  // validation and checkpoint writing: no training step runs
  std::int64_t samples = 0, steps = 0;
};

// The run context (config, rank, device), the step engine, the reporter, and what they work on.
struct Trainer::State : RunContext {
  class FitLoop;  // one fit() call's loop and the callbacks' RunControl, in fit_loop.cpp
  std::unique_ptr<dist::GradientSync> sync;
  std::shared_ptr<BatchNormSync> norm_sync;  // model.sync_batch_norm on several ranks; the layers hold it too
  data::Batch no_rows;                       // what this rank joins a synchronised step with when it has no samples
  std::int64_t agreed_micro_batch = 0;       // what the last step agreement settled on
  RunData data;
  DataPlacement placement;
  std::int64_t train_size = 0, val_size = 0;
  double setup_seconds = 0;                                  // the Trainer's constructor: everything before fit()
  std::vector<std::pair<std::string, double>> setup_phases;  // RunInfo::setup_phases
  Clock::time_point phase_start = Clock::now();
  void phase_done(const char* name) {
    setup_phases.emplace_back(name, seconds_since(phase_start));
    phase_start = Clock::now();
  }
  std::size_t skipped_reported = 0;
  std::unique_ptr<Model> model;
  std::vector<at::Tensor> params;
  // Tensors of the model's state that are not parameters (batch-norm running statistics), in a
  // distributed run: each rank's follow its own shard until validation makes them rank 0's.
  std::vector<at::Tensor> buffers;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<double> group_lrs;            // each optimizer group's base rate (optimizer.param_groups)
  std::unique_ptr<OptimizerShards> shards;  // distributed.shard_optimizer on several ranks
  GradientReadout readout;                  // the logged steps' gradient norm (logging.grad_norm), gradients a callback asked for
  std::unique_ptr<GradScaler> scaler;
  std::unique_ptr<StepEngine> engine;
  std::unique_ptr<CheckpointStore> store;
  std::unique_ptr<memory::OomGuard> train_guard, val_guard;
  Reporter reporter;
  std::vector<std::shared_ptr<Callback>> callbacks;  // the built-in ones the config turns on, then the user's
  TrainingProgress progress;
  std::int64_t micro_batch = 0, effective_batch = 0, steps_per_epoch = 0, total_steps = 0, num_workers = 0;
  std::int64_t last_saved_step = -1;
  LoneSamplePlan lone_samples;  // an epoch's last pass of one sample, which batch norm cannot take, left out
  std::string last_checkpoint;
  std::string cuda_graphs = "off";  // train.cuda_graphs as resolved: "on" or "off (why)"
  // The random generators' states once set up (seeded, or restored by a resume), which the first
  // fit() starts from: what another trainer in this process drew meanwhile changes nothing.
  at::Tensor cpu_rng_at_setup, device_rng_at_setup;
  bool classification = true;
  at::Tensor class_weights;    // data.class_weights on the device (undefined: none)
  bool channels_last = false;  // config.uses_channels_last(), resolved once

  CheckpointParts parts() { return CheckpointParts{*model, *optimizer, *scaler, device}; }
  // The balanced accuracy is worth a place beside the accuracy in the lines people read (RunInfo's).
  bool shows_balanced_accuracy() const {
    return classification &&
           (data.unbalanced_classes || config.train.class_weights.any() || config.checkpoint.best_metric == "val_balanced_accuracy");
  }
  std::int64_t oom_events() const { return train_guard->oom_count() + val_guard->oom_count(); }
  void setup();
  void prepare_to_train(const std::string& device_name);
  void prepare_to_evaluate(const std::string& device_name);
  void open_the_data();
  void make_run_folders();
  void make_the_model();
  void place_the_model();
  void share_the_weights();
  void make_the_step();
  // After the callbacks are known: the CUDA-graph backend where the steps can be captured.
  void choose_step_backend();
  void count_the_steps();
  void make_step_engine();
  void lock_folders();      // throws UsageError when another run holds them
  void check_disk_space();  // throws UsageError when the checkpoints would not fit
  void place_the_data(const std::string& device_name);
  void report_skipped();
  void resolve_workers();
  void open_reporter(std::int64_t start_step);
  void resume();
  void keep_rng_at_setup();
  void restore_rng_at_setup();
  void stamp_progress();
  void refuse_another_run(const std::string& path, const YAML::Node& saved, const TrainingProgress& at) const;
  void continue_on_this_shape(const std::string& path);
  void count_steps_from_the_position();
  void note_config_changes(const std::string& path, const std::string& saved_yaml);
  void write_config_file();  // after a resume was accepted: a refused one leaves the run's file as it was
  EpochMetrics validate(std::int64_t epoch, std::optional<double> train_loss, double seconds);
  EvaluationResult evaluate(const std::string& weights);
  // `together`: the ranks sum their samples (a collective); a failed run's figures are this rank's.
  void fill_run_figures(FitResult& result, const RunTotals& totals, bool together = true);
  std::string failing_part() const;
  void say_how_it_went(const FitResult& result, const FitLoop& loop);
  void write_final_weights(FitResult& result);
  std::string write_weights(const std::string& file_name, const NamedTensors& tensors);
  std::string refused_saves_explained(const std::function<std::string()>& save);  // returns save()'s path
};

}  // namespace gputrain::train
