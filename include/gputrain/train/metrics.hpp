#pragma once
// What the trainer reports, and the sinks it reports to (console, metrics.jsonl, training.log,
// TensorBoard). Sinks only format and write; they never change the run.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gputrain/memory/oom_guard.hpp"

namespace gputrain::train {

/// Fixed facts about a run, given to every sink before the first step.
struct RunInfo {
  std::string run_dir, model, device, precision;
  std::int64_t parameters = 0;
  std::int64_t total_steps = 0, steps_per_epoch = 0, epochs = 0;
  std::int64_t batch_size = 0, grad_accum = 1;  ///< the micro-batch the run starts with
  bool batch_size_auto = false;                 ///< found by `batch_size: auto`
  std::int64_t num_workers = 0;                 ///< data.num_workers after `auto` is resolved
  std::string data_cache = "none";              ///< where the data lives: vram, ram or none (streamed)
  std::int64_t train_samples = 0, val_samples = 0;
  double data_read_seconds = 0;  ///< opening the data files (a CSV's parse), before the cache load
  double data_load_seconds = 0;  ///< the one-time load into the cache, apart from any epoch
  double setup_seconds = 0;      ///< the trainer's set-up (device, data, model, batch search, resume), before fit()
  /// Where setup_seconds went, in order: device, ranks, data, cache (with batch_size: auto's
  /// search), model, step (optimizer and the step engine), callbacks, resume, config_file (an
  /// evaluation: device, ranks, data, model). They add up to setup_seconds.
  std::vector<std::pair<std::string, double>> setup_phases;
  std::int64_t start_step = 0;      ///< above 0 when resumed
  std::int64_t world_size = 1;      ///< data-parallel ranks (batch_size is per rank)
  std::string distributed;          ///< "2 ranks over mpi", or empty for a plain run
  std::string cuda_graphs = "off";  ///< "on", or "off (why)": train.cuda_graphs as the run resolved it
  /// Epoch lines give the val balanced accuracy beside the val accuracy: the classes are
  /// unbalanced, train.class_weights is set, or best.pt is kept by it (metrics.jsonl always has it).
  bool show_balanced_accuracy = false;
};

/// Averages over the steps since the previous report.
struct StepMetrics {
  std::int64_t step = 0;   ///< optimizer steps done (1-based after the first step)
  std::int64_t epoch = 0;  ///< 0-based
  double loss = 0;
  double samples_per_second = 0;
  double data_seconds = 0;     ///< per step: waiting for the batch
  double compute_seconds = 0;  ///< per step: forward, backward, optimizer
  double lr = 0;
  double loss_scale = 1;
  std::int64_t skipped_steps = 0;                                            ///< total so far (inf/nan gradients)
  std::uint64_t memory_allocated = 0, memory_reserved = 0, memory_peak = 0;  ///< bytes; on the CPU, counted tensors
  std::int64_t micro_batch = 0;                                              ///< in effect now (smaller than the run's after an OOM)
  std::int64_t oom_events = 0;                                               ///< total so far
  double eta_seconds = 0;
  /// The global L2 norm of the logged step's gradients, after unscaling and before clipping
  /// (logging.grad_norm); absent when off or when the step was not measured.
  std::optional<double> grad_norm;
  /// Share of step time spent waiting for data, in percent: a GPU starved by its input shows here.
  double data_stall_percent() const {
    const double total = data_seconds + compute_seconds;
    return total > 0 ? 100.0 * data_seconds / total : 0.0;
  }
};

/// End-of-epoch figures; the validation ones are absent without validation data.
struct EpochMetrics {
  std::int64_t epoch = 0, step = 0;
  /// The mean loss of the epoch's steps this run took (after a resume mid-epoch, those since the
  /// resume); absent when all of them ran before a resume, whose losses no checkpoint keeps.
  std::optional<double> train_loss;
  std::optional<double> val_loss, val_accuracy, val_mse, val_mae;
  /// Classification: each class's share of its validation samples predicted right, averaged over
  /// the classes that have any (scikit-learn's balanced_accuracy_score); equals val_accuracy when
  /// the classes are even, and shows what the rarer classes get when they are not.
  std::optional<double> val_balanced_accuracy;
  /// Classification, per class in class id order: its validation samples, those predicted right,
  /// and how often it was the prediction (recall is right / samples, precision right / predicted).
  std::vector<std::int64_t> val_class_samples, val_class_right, val_class_predicted;
  /// Validation samples measured, over all ranks (unreadable images left out); 0 without validation.
  std::int64_t val_samples = 0;
  double seconds = 0;
  /// Figures callbacks added in on_validation (val_loss_ema, ...), by name, in the order added.
  std::vector<std::pair<std::string, double>> extra;
};

/// A record a callback adds to the metrics stream (system metrics, an alert): metrics.jsonl gets
/// {"kind": kind, "step": step, figures..., texts...}, TensorBoard the figures as <kind>/<name>.
struct MetricRecord {
  std::string kind;
  std::int64_t step = 0;
  std::vector<std::pair<std::string, double>> figures;
  std::vector<std::pair<std::string, std::string>> texts;
};

/// The scalars a step line, an epoch or a record is shown as in TensorBoard and MLflow, by name
/// ("train/loss", "val/accuracy", "system/gpu_utilization_percent").
using Scalars = std::vector<std::pair<std::string, double>>;
Scalars scalars_of(const StepMetrics& metrics);
Scalars scalars_of(const EpochMetrics& metrics);
Scalars scalars_of(const MetricRecord& record);

class MetricSink {
 public:
  virtual ~MetricSink() = default;
  virtual void on_start(const RunInfo&) {}
  virtual void on_step(const StepMetrics&) {}
  virtual void on_epoch(const EpochMetrics&) {}
  /// An out-of-memory event (recovered by halving the micro-batch, or not).
  virtual void on_oom(const memory::OomEvent&) {}
  /// A callback's record (MetricRecord).
  virtual void on_record(const MetricRecord&) {}
  /// A free-form line worth keeping (checkpoint written, resumed).
  virtual void on_note(const std::string&) {}
  /// How the run ended (final weights written, interrupted): for the record (training.log). The
  /// caller reports the outcome from FitResult, so the console does not say it twice.
  virtual void on_outcome(const std::string&) {}
  /// What the run starts on now ("step 3 of 500", "validation after epoch 2"), before work that
  /// may take long: the console says it is still running when it runs long without a line.
  virtual void on_work(const std::string&) {}
  virtual void on_end() {}
};

/// Takes a file sink's warning line when the disk refuses its records (full, over quota): the
/// records are dropped, training goes on, and the warning says which steps miss theirs. Empty: the
/// warnings go to the log (stderr).
using SinkWarning = std::function<void(const std::string& line)>;

/// One JSON object per line: {"kind":"start"|"step"|"epoch"|"oom",...}.
std::unique_ptr<MetricSink> make_jsonl_sink(const std::string& path, SinkWarning warn = {});
/// Scalars (train/loss, train/lr, val/loss, ...) in a TensorBoard event file under `dir`.
std::unique_ptr<MetricSink> make_tensorboard_sink(const std::string& dir, SinkWarning warn = {});
/// Human lines (header, steps, epochs, notes) appended to a file: training.log.
std::unique_ptr<MetricSink> make_log_file_sink(const std::string& path, SinkWarning warn = {});
/// A redrawn progress bar (bar) or one line per report (lines) on `out`. Work (MetricSink::on_work)
/// that runs `quiet` without a line is said to be still running, again each time its time doubles
/// (30 s, 1 min, 2 min, ...): a ResNet-50 step on a CPU takes minutes, and silence looks like a hang.
/// The bar fits `columns()` at each draw (default: the terminal's on std::cerr, else 120), and is
/// redrawn within a second of a resize (SIGWINCH) while work runs.
std::unique_ptr<MetricSink> make_console_sink(const std::string& mode, std::ostream& out,
                                              std::chrono::milliseconds quiet = std::chrono::seconds(30),
                                              std::function<int()> columns = {});

/// "12.3 MiB"-style memory, "1:02:03"-style durations: shared by the human sinks.
std::string format_duration(double seconds);
/// The figure an EMA's figure is of ("val_accuracy" for "val_accuracy_ema"); others as they are.
std::string plain_metric(const std::string& metric);
/// Whether a validation figure (by its metrics.jsonl name) is an accuracy: a share, larger is better.
bool is_accuracy_metric(const std::string& metric);
/// A validation figure by its metrics.jsonl name, as the epoch lines show it: an accuracy
/// (val_accuracy, val_balanced_accuracy) as "80.07%", any other figure as "0.4512".
std::string metric_text(const std::string& metric, double value);

}  // namespace gputrain::train
