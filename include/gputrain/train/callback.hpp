#pragma once
// train::Callback: the seam features plug into. The loop calls each registered callback at fit,
// step, validation and epoch boundaries; a callback reads the run through RunControl and may act
// on it (stop the run, save a checkpoint, scale the learning rate, say a line). Its state_dict is
// saved in every checkpoint under its name, so a resumed run continues exactly. Early stopping,
// the plateau schedule, best.pt, periodic checkpoints, the divergence stop and train.max_time are
// callbacks (src/train/loop/callbacks/); a C++ program adds its own through TrainerOptions.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gputrain/train/metrics.hpp"
#include "gputrain/train/model.hpp"

namespace gputrain::train {

struct Config;
struct FitResult;
struct TrainingProgress;

/// A callback's saved state: named numbers (integers are exact up to 2^53). Absent keys are what
/// a callback finds in checkpoints written before it existed.
using CallbackState = std::map<std::string, double>;

/// Why a callback ended the run; the loop reports it in FitResult.
enum class StopReason {
  early_stop,  ///< the watched figure stopped improving: the run is done (FitResult::early_stop_reason)
  time_limit,  ///< train.max_time: ends as a finished run does (FitResult::time_limit_reached)
  request,     ///< any other reason of a user's callback: ends as a finished run does, with the reason noted
};

/// The loop's means of the steps since the last step line (or checkpoint check): what a watch on
/// the loss sees. Sums over ranks, so every rank sees the same figures.
struct LossWindow {
  double mean_loss = 0;
  std::int64_t first_step = 0, last_step = 0;  ///< 1-based optimizer steps the window covers
  std::int64_t skipped_steps = 0;              ///< of them, those the GradScaler skipped (inf/nan)
};

/// The run as a callback sees and steers it. Actions take effect at the next step boundary.
class RunControl {
 public:
  virtual ~RunControl() = default;
  virtual const Config& config() const = 0;
  /// Step, epoch and position; read-only.
  virtual const TrainingProgress& progress() const = 0;
  /// Steps the run is asked for in total.
  virtual std::int64_t total_steps() const = 0;
  /// Rank 0 writes files; every rank runs every callback (the figures they see are global).
  virtual bool writer() const = 0;
  /// The data-parallel ranks the run spans (1 for a plain run).
  virtual std::int64_t world_size() const { return 1; }
  /// Wall time the run has trained for, the runs' before a resume included (train.max_time counts it).
  virtual double trained_seconds() const = 0;
  /// Whether the loss scaler is on (fp16): it skips inf/nan steps instead of applying them.
  virtual bool loss_scaling() const = 0;
  /// The newest checkpoint this run wrote or resumed from ("" when none).
  virtual std::string last_checkpoint() const = 0;
  /// A line for the console and training.log (rank 0 speaks for the run).
  virtual void note(const std::string& line) = 0;
  /// A line for training.log only: how the run ended, which the command reports itself.
  virtual void record(const std::string& line) = 0;
  /// Ends the run at the next step boundary, with a checkpoint. With several ranks, a request
  /// made at a step's end is agreed on before the next step, so all ranks stop on the same one.
  virtual void request_stop(StopReason reason, const std::string& why) = 0;
  /// The stop already requested, if any.
  virtual std::optional<StopReason> stop_requested() const = 0;
  /// Writes a periodic checkpoint (step-N.pt) once every callback has had the current hook, so it
  /// holds their states after it. Rank 0 writes; ask on every rank alike, as the built-in
  /// callbacks do: with distributed.shard_optimizer the ranks gather the optimizer state together.
  virtual void save_checkpoint() = 0;
  /// Writes best.pt the same way.
  virtual void save_best() = 0;
  /// Loads the model's weights from a checkpoint (best.pt) into the live model.
  virtual void load_weights(const std::string& checkpoint) = 0;
  /// Where best.pt is (or would be).
  virtual std::string best_path() const = 0;
  /// The factor the schedule's learning rate is multiplied by (1 until a callback changes it);
  /// saved in checkpoints with the progress.
  virtual double lr_scale() const = 0;
  virtual void set_lr_scale(double scale) = 0;
  /// The model being trained, its tensors on the device. Change them only in place, and only as
  /// needs_eager_steps() allows.
  virtual Model& model() = 0;
  /// The epoch's validation with `weights` (the model's named_state, in its order, on its device)
  /// in place of the model's own, which are put back after: an EMA's figures. From on_validation,
  /// on every rank (the figures are summed over ranks).
  virtual EpochMetrics validate_with(const NamedTensors& weights) = 0;
  /// Writes `tensors` as <logging.dir>/<file_name> with model.safetensors' metadata (the config,
  /// the columns, the class names), atomically, and returns its path: model_ema.safetensors. Rank 0
  /// writes files (writer()). Throws Error, with the fix, when the disk refuses it.
  virtual std::string save_weights(const std::string& file_name, const NamedTensors& tensors) = 0;
  /// Asks for the next optimizer step's gradients, which gradients() gives in its on_step_end (a
  /// copy: the step frees them otherwise).
  virtual void want_gradients() = 0;
  /// The gradients of the step just taken, as applied (unscaled), by parameter name: an eager
  /// step's when want_gradients() asked for them before it (else none); a replayed CUDA graph's
  /// always, since they stay in place.
  virtual NamedTensors gradients() = 0;
  /// Adds `record` to the metrics stream (metrics.jsonl, TensorBoard); rank 0 writes it.
  virtual void add_record(const MetricRecord& record) = 0;
  /// Says a warning: one "warning:" line on the console and in training.log (rank 0 speaks).
  virtual void warn(const std::string& line) = 0;
  /// Element-wise sums of `values` over the ranks, on every rank (the identity for a plain run).
  /// A collective: every rank's callback must ask at the same point with as many values; `what`
  /// names it in errors.
  virtual std::vector<double> sum_over_ranks(std::vector<double> values, const std::string& what) = 0;
};

/// Hooks around the training loop, all optional. Lightning's Callback, in C++.
class Callback {
 public:
  virtual ~Callback() = default;
  /// The key its state is saved under in checkpoints: unique among a run's callbacks.
  virtual std::string name() const = 0;
  /// After set-up and resume, before the first step. A stop asked for here ends the run before its
  /// first step on every rank at once: decide it from what every rank reads alike (config, checkpoint).
  virtual void on_fit_start(RunControl&) {}
  /// After every optimizer step (`step`: steps done), after its step line when it made one.
  virtual void on_step_end(RunControl&, std::int64_t /*step*/) {}
  /// After a step line (logging.every_steps, the first and the last step): the figures it shows
  /// and the loss of the steps it covers. The loss is read from the device only for these lines.
  virtual void on_log(RunControl&, const StepMetrics&, const LossWindow&) {}
  /// Before a checkpoint is written: the loss of the steps since the last step line (null when none ran).
  virtual void on_before_checkpoint(RunControl&, const LossWindow*) {}
  /// After each epoch's validation, before it is reported and before on_validation_end: a callback
  /// may add figures to `metrics.extra` (an EMA's val_loss_ema), which the sinks report and
  /// checkpoint.best_metric may watch. Without validation data, metrics.val_samples is 0.
  virtual void on_validation(RunControl&, EpochMetrics& /*metrics*/) {}
  /// After each epoch's validation, once the epoch counts as done (progress().epoch includes it).
  /// Every epoch ends so; the validation figures are absent without validation data.
  virtual void on_validation_end(RunControl&, const EpochMetrics&) {}
  /// After every callback's on_validation_end for the epoch.
  virtual void on_epoch_end(RunControl&, const EpochMetrics&) {}
  /// After a callback added `record` to the metrics stream (RunControl::add_record: system
  /// readings, an alert), on the rank that added it. A record added from here is written but not
  /// passed on again.
  virtual void on_record(RunControl&, const MetricRecord&) {}
  /// After the last checkpoint, before model.safetensors is written: `result` may still be changed.
  virtual void on_fit_end(RunControl&, FitResult&) {}
  /// The run's last hook, after model.safetensors is written (FitResult::weights_path; empty when
  /// interrupted or on ranks other than 0): a tracker sends the run's files from here. A run that
  /// fails gets neither this nor on_fit_end, but on_fit_failed.
  virtual void on_fit_closed(RunControl&, const FitResult&) {}
  /// A run an error ended (FitResult::error), before the error is said: the figures so far, this
  /// rank's alone. Nothing that needs the other ranks may be called (they may be gone), and what
  /// this throws is dropped: the run's own error is the one that counts.
  virtual void on_fit_failed(RunControl&, const FitResult&) {}
  /// What a resumed run needs to go on exactly.
  virtual CallbackState state_dict() const { return {}; }
  /// Restores what state_dict() returned (from a checkpoint); may be empty for a checkpoint that predates the callback.
  virtual void load_state_dict(const CallbackState&) {}
  /// Tensors a resumed run needs (an EMA of the weights), saved in checkpoints under the callback's
  /// name (docs/checkpoints.md: callback_tensors); none by default.
  virtual NamedTensors tensor_state() const { return {}; }
  /// Restores what tensor_state() returned, on the CPU, before on_fit_start; empty for a checkpoint without them.
  virtual void load_tensor_state(const NamedTensors&) {}
  /// True when the callback changes the model or optimizer between steps in a way a replayed CUDA
  /// graph would not see: it replaces a parameter tensor, or freezes or unfreezes one
  /// (requires_grad). Reading weights, scaling the learning rate and stopping are all fine. The run
  /// then steps eagerly (train.cuda_graphs: auto, said in its start record) or refuses to start (on).
  virtual bool needs_eager_steps() const { return false; }
};

}  // namespace gputrain::train
