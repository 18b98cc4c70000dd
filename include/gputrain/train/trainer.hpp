#pragma once
// train::Trainer: the training loop of `gputrain train`: mixed precision, gradient accumulation
// and clipping, validation, metrics, atomic checkpoints, exact resume, a clean stop on SIGTERM.

#include <chrono>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/train/config.hpp"
#include "gputrain/train/evaluation.hpp"
#include "gputrain/train/metrics.hpp"

namespace gputrain::data {
struct Batch;
}

namespace gputrain::train {

class Callback;
class Model;

/// What a finished (or stopped) run did.
struct FitResult {
  std::int64_t start_step = 0;   ///< 0, or the step a resumed run began at
  std::int64_t steps = 0;        ///< optimizer steps done, in total
  std::int64_t total_steps = 0;  ///< what the run was asked for
  std::int64_t epochs_done = 0;  ///< epochs completed, those before a resume included
  bool interrupted = false;      ///< stopped by a signal; a checkpoint was written
  /// train.max_time ended the run (or had already, before this resume); it ends as a finished
  /// run does otherwise: a checkpoint and model.safetensors.
  bool time_limit_reached = false;
  double trained_seconds = 0;        ///< what train.max_time counts: this run's time and the runs' before a resume
  std::optional<double> first_loss;  ///< training loss of the first step this process ran
  std::optional<double> last_loss;   ///< training loss of the last step this process ran
  std::optional<EpochMetrics> last_epoch;
  bool has_validation = false;          ///< the run has validation data (validated at each epoch's end)
  bool show_balanced_accuracy = false;  ///< RunInfo's: the val balanced accuracy belongs beside the val accuracy
  /// When a budget (train.max_steps or train.max_time) ended the run inside an epoch, before that
  /// epoch's end and its validation: the epoch (1-based) and the steps of it that ran; 0 when it
  /// ended at an epoch's end (or was interrupted).
  std::int64_t ended_inside_epoch = 0, steps_into_epoch = 0, steps_per_epoch = 0;
  /// Why train.early_stop_patience ended the run ("val_loss has not improved on 0.3412 for 5
  /// epochs ..."); empty when it did not.
  std::string early_stop_reason;
  /// The epoch (1-based) whose weights model.safetensors holds when it is not the last one (an
  /// early stop ends on the best epoch's), with checkpoint.best_metric's value there; 0: the last.
  std::int64_t weights_epoch = 0;
  std::optional<double> weights_metric;
  std::int64_t skipped_steps = 0;    ///< inf/nan gradient steps (fp16)
  std::int64_t samples = 0;          ///< training samples this process ran through
  std::int64_t batch_size = 0;       ///< the micro-batch the run started with (found, when auto)
  std::int64_t micro_batch = 0;      ///< the micro-batch in effect at the end (smaller after OOMs)
  std::int64_t oom_events = 0;       ///< out-of-memory events survived (or the one that ended it)
  std::int64_t alerts = 0;           ///< logging.alerts fired (each a warning line and a `kind: alert` record)
  double samples_per_second = 0;     ///< over the steps this process ran, every rank's samples
  double data_stall_percent = 0;     ///< share of step_seconds spent waiting for batches
  double step_seconds = 0;           ///< wall time of this process's steps (validation and checkpoints excluded)
  double run_seconds = 0;            ///< wall time of fit(): steps, validation and checkpoints
  double data_seconds = 0;           ///< of which waiting for batches
  std::string model;                 ///< what was trained: model.name (chosen, when auto) or the TorchScript file
  std::string data_cache;            ///< where the data lived: vram, ram or none (streamed)
  double data_load_seconds = 0;      ///< the one-time load into the cache (not in any epoch)
  std::int64_t sample_bytes = 0;     ///< one stored sample, input and target
  std::int64_t skipped_samples = 0;  ///< unreadable samples left out (corrupt images)
  int world_size = 1;                ///< ranks in the run (1: a plain run)
  int rank = 0;
  std::int64_t gradient_buckets = 0;                 ///< all-reduce buckets per step (distributed runs)
  std::int64_t buckets_sent_in_backward = 0;         ///< of all steps' buckets, those started while backward ran
  double gradient_wait_seconds = 0;                  ///< time steps waited for their all-reduces after backward
  double agreement_seconds = 0;                      ///< time the step agreements took (mostly waiting for the slowest rank)
  std::optional<double> communication_seconds;       ///< the gradient all-reduces' own time (MPI can tell)
  std::optional<double> communication_hidden_share;  ///< of that time, the share hidden behind backward
  std::int64_t optimizer_state_bytes = 0;            ///< the optimizer state this rank held at the end (sharded: its share)
  double parameter_share_seconds = 0;                ///< distributed.shard_optimizer: the steps' parameter broadcasts
  std::string run_dir;
  std::string last_checkpoint;  ///< empty when none was written
  std::string weights_path;     ///< model.safetensors (after a complete run)
  /// The error that ended a failed run, as Callback::on_fit_failed sees it; empty otherwise. Its
  /// figures are this rank's alone: the peers of a failed run may be gone.
  std::string error;
};

/// How the trainer talks to its surroundings; the defaults suit a command-line run.
struct TrainerOptions {
  std::ostream* console = nullptr;   ///< progress and notes; nullptr: std::cerr
  bool console_is_terminal = false;  ///< progress `auto` draws a bar only on a terminal
  /// A step, validation or checkpoint that runs this long without a line is said to be still
  /// running on the console (again at twice, four times, ... as long); tests shorten it.
  std::chrono::milliseconds console_quiet = std::chrono::seconds(30);
  /// The user's callbacks (train::Callback), run after the built-in ones in this order; each
  /// one's state_dict is saved in checkpoints under its name() and restored on resume.
  std::vector<std::shared_ptr<Callback>> callbacks;
  std::function<void(std::int64_t step)> after_step;  ///< called after every optimizer step (tests)
  std::function<void()> before_batch;                 ///< called just before the loop asks its feed for a training batch (profile --step)
  std::function<void(const data::Batch& batch)> on_batch;  ///< called with each training batch before its step (tests)
  /// Set up for evaluate() only: nothing in logging.dir is created, locked or written, no
  /// checkpoint is resumed, and the settings that only training reads are not checked; fit() refuses.
  bool evaluate_only = false;
};

class Trainer {
 public:
  /// Selects the device, builds data, model, optimizer and scaler, and resumes when the config
  /// says so. Throws UsageError/EnvironmentError for a config this machine cannot run, and
  /// UsageError when another run holds logging.dir or checkpoint.dir (held until fit() returns).
  explicit Trainer(Config config, TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Trains until `train.epochs`/`train.max_steps`/`train.max_time` or a stop request (a signal of
  /// core::kStopSignals or core::request_stop()), which finishes the current step and writes a checkpoint first. Every
  /// step runs inside a memory::OomGuard; when it gives up, fit() writes a checkpoint and throws
  /// memory::OomExhaustedError (exit 1).
  FitResult fit();

  /// Loads `weights` (a checkpoint .pt or a model.safetensors, of the model this config builds)
  /// and measures it on the config's validation data, summed over ranks; trains nothing and writes
  /// nothing. Throws UsageError for a missing or unreadable file, weights of another model (naming
  /// the tensor that differs), or a config without validation data. Construct the trainer with `evaluate_only` for this.
  EvaluationResult evaluate(const std::string& weights);

  Model& model();
  /// The device chosen ("cpu", "cuda:0").
  std::string device() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gputrain::train
