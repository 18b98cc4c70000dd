#pragma once
// The trainer's private state, shared by the files that implement Trainer: trainer_setup.cpp
// (device, data, model, optimizer, sinks, resume), trainer.cpp (the step loop and fit()) and
// validation.cpp.

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gputrain/core/directory_lock.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/dist/gradient_sync.hpp"
#include "gputrain/memory/oom_guard.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/metrics.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/run_setup.hpp"
#include "gputrain/train/trainer.hpp"
#include "train/step/direct_backward.hpp"
#include "rank_group.hpp"
#include "train/step/training_step.hpp"

namespace YAML {
class Node;  // a checkpoint's config, in resume()'s checks
}  // namespace YAML

namespace gputrain::train {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// What fit() reports about the steps this process ran.
struct RunTotals {
  Clock::time_point start = Clock::now();
  double data_seconds = 0;
  double paused_seconds = 0;  // validation and checkpoint writing: no training step runs
  std::int64_t samples = 0, steps = 0;
};

struct Trainer::State {
  Config config;
  TrainerOptions options;
  RankGroup ranks;                        // world size 1 and no communicator in a plain run
  std::unique_ptr<dist::GradientSync> sync;
  std::unique_ptr<DirectBackward> direct;  // the MLP's hand-written backward, where it applies
  std::int64_t agreed_micro_batch = 0;    // what the last step agreement settled on
  std::string config_yaml;
  // The writer's hold on logging.dir (and checkpoint.dir): from construction until fit() returns.
  std::vector<std::unique_ptr<core::DirectoryLock>> folder_locks;
  c10::Device device{at::kCPU};
  RunData data;
  DataPlacement placement;
  std::int64_t train_size = 0, val_size = 0;
  std::size_t skipped_reported = 0;
  std::unique_ptr<Model> model;
  std::vector<at::Tensor> params;
  // Tensors of the model's state that are not parameters (batch-norm running statistics), in a
  // distributed run: each rank's follow its own shard until validation makes them rank 0's.
  std::vector<at::Tensor> buffers;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<GradScaler> scaler;
  std::unique_ptr<CheckpointStore> store;
  std::unique_ptr<memory::OomGuard> train_guard, val_guard;
  std::vector<std::unique_ptr<MetricSink>> sinks;
  TrainingProgress progress;
  std::int64_t micro_batch = 0, effective_batch = 0, steps_per_epoch = 0, total_steps = 0, num_workers = 0;
  std::int64_t last_saved_step = -1;
  bool last_saved_time_limit = false;  // that checkpoint recorded the whole train.max_time as used
  // train.max_time counts the time of fit() calls, those of the runs before a resume included
  // (as their checkpoints recorded it): what this process's fit() started from, and when.
  double trained_before = 0;
  Clock::time_point fit_start = Clock::now();
  double trained_seconds() const { return trained_before + seconds_since(fit_start); }
  bool time_is_up() const { return config.train.max_time > 0 && trained_seconds() >= config.train.max_time; }
  bool time_limit_agreed = false;  // the ranks stopped for train.max_time: the run has used all of it
  std::string last_checkpoint;
  std::vector<std::string> pending_notes;  // said before the sinks exist, shown once they do
  bool classification = true;
  at::Tensor class_weights;  // data.class_weights on the device (undefined: none)
  bool channels_last = false;  // config.uses_channels_last(), resolved once
  bool evaluating() const { return options.evaluate_only; }

  CheckpointParts parts() { return CheckpointParts{*model, *optimizer, *scaler, device}; }
  StepParts step_parts() {
    return StepParts{*model,   *optimizer, *scaler, params,     data.transform, config.train,
                     channels_last, classification, device, 0, sync.get(), direct.get(), class_weights};
  }
  void note(const std::string& line) {
    for (auto& s : sinks) s->on_note(line);
  }
  // What the run starts on now: the console says it is still running when it runs long.
  void working_on(const std::string& what) {
    for (auto& s : sinks) s->on_work(what);
  }
  // training.log is often all that is kept of a batch job: the error that ends a run goes there
  // too, with its fix, before the sinks close. The command still prints it as "error:".
  void end_with_failure(const std::exception& e) {
    std::string outcome = std::string("failed: ") + e.what();
    if (const auto* error = dynamic_cast<const Error*>(&e); error && !error->remedy().empty()) outcome += "; fix: " + error->remedy();
    for (auto& s : sinks) {
      s->on_outcome(outcome);
      s->on_end();
    }
  }
  void report_oom_events(memory::OomGuard& guard) {
    for (const auto& event : guard.take_events())
      for (auto& s : sinks) s->on_oom(event);
  }
  // The balanced accuracy is worth a place beside the accuracy in the lines people read (RunInfo's).
  bool shows_balanced_accuracy() const {
    return classification && (data.unbalanced_classes || config.train.class_weights.any() || config.checkpoint.best_metric == "val_balanced_accuracy");
  }
  std::int64_t oom_events() const { return train_guard->oom_count() + val_guard->oom_count(); }
  void setup();
  void lock_folders();  // throws UsageError when another run holds them
  void check_disk_space();  // throws UsageError when the checkpoints would not fit
  void place_the_data(const std::string& device_name);
  void report_skipped();
  void resolve_workers();
  void make_sinks(std::int64_t start_step);
  void resume();
  void stamp_progress();
  void refuse_another_run(const std::string& path, const YAML::Node& saved, const TrainingProgress& at) const;
  void continue_on_this_shape(const std::string& path);
  void note_config_changes(const std::string& path, const std::string& saved_yaml);
  void write_config_file();  // after a resume was accepted: a refused one leaves the run's file as it was
  at::Tensor train_step(const data::Batch* batch, std::int64_t global_rows);
  EpochMetrics validate(std::int64_t epoch, double train_loss, double seconds);
  EvaluationResult evaluate(const std::string& weights);
  void run_epochs(FitResult& result, RunTotals& totals);
  class EpochLoop;  // run_epochs' loop, in epoch_loop.cpp
  void restore_best_weights(FitResult& result, const std::string& metric);  // after an early stop: best.pt's weights
  void checkpoint();
  std::string refused_saves_explained(const std::function<std::string()>& save);  // returns save()'s path
};

}  // namespace gputrain::train
