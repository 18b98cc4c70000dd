#pragma once
// Trainer::State::FitLoop: one fit() call. It runs the epochs of steps, reports step lines and
// epochs, and is the RunControl every callback steers the run through (stop, save, lr scale).
// Its own logic is only the loop's; features live in callbacks (loop/callbacks/).

#include <ATen/Tensor.h>

#include <optional>
#include <set>
#include <string>

#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/train/callback.hpp"
#include "trainer_state.hpp"

namespace gputrain::train {

class Trainer::State::FitLoop final : public RunControl {
 public:
  FitLoop(Trainer::State& s, FitResult& result);

  /// Says what a resumed run has left, then the callbacks' on_fit_start.
  void start();
  /// Epochs of steps until the budget, a stop signal or a callback's stop.
  void run();
  /// The state the run ends in, whether finished or stopped.
  void final_checkpoint() { write_checkpoint(); }
  /// Fills the result with the run's figures.
  void finish();
  /// The callbacks' on_fit_end, before the final weights are written.
  void end_callbacks();
  /// After the final weights: each callback's on_fit_closed.
  void close_callbacks();
  /// An error ends the run: this rank's figures so far, then each callback's on_fit_failed.
  void fail_callbacks(const std::string& error) noexcept;
  /// The same, then the error in training.log (Reporter::fail): how fit() ends a failed run.
  void fail(const std::exception& error);
  /// Steps this fit() ran.
  std::int64_t steps_run() const { return totals_.steps; }

  // RunControl
  const Config& config() const override { return s_.config; }
  const TrainingProgress& progress() const override { return s_.progress; }
  std::int64_t total_steps() const override { return s_.total_steps; }
  bool writer() const override { return s_.ranks.writer(); }
  std::int64_t world_size() const override { return s_.ranks.world_size(); }
  double trained_seconds() const override { return trained_before_ + seconds_since(fit_start_); }
  bool loss_scaling() const override;
  std::string last_checkpoint() const override { return s_.last_checkpoint; }
  void note(const std::string& line) override { s_.reporter.note(line); }
  void record(const std::string& line) override { s_.reporter.record(line); }
  void add_record(const MetricRecord& record) override;
  void warn(const std::string& line) override { s_.reporter.note("warning: " + line); }
  std::vector<double> sum_over_ranks(std::vector<double> values, const std::string& what) override {
    return s_.ranks.sum(std::move(values), what);
  }
  void request_stop(StopReason reason, const std::string& why) override;
  std::optional<StopReason> stop_requested() const override { return stop_ ? stop_ : pending_; }
  void save_checkpoint() override { checkpoint_due_ = true; }
  void save_best() override { best_due_ = true; }
  void load_weights(const std::string& checkpoint) override;
  std::string best_path() const override;
  double lr_scale() const override { return s_.progress.lr_scale; }
  void set_lr_scale(double scale) override { s_.progress.lr_scale = scale; }
  Model& model() override;
  EpochMetrics validate_with(const NamedTensors& weights) override;
  std::string save_weights(const std::string& file_name, const NamedTensors& tensors) override;
  void want_gradients() override { s_.readout.keep_gradients = true; }
  NamedTensors gradients() override;

 private:
  void finish(bool together);
  void run_epoch();
  // Ends the run when an epoch that had `to_read` samples left trained on none (`rows`): its data
  // is gone, and it would run empty epochs for ever. A collective.
  void refuse_unread_epoch(std::int64_t start_position, std::int64_t to_read, std::int64_t rows);
  void tally_step(std::int64_t rows, double data_seconds, const at::Tensor& loss);
  // Writes step-N.pt unless this step's is written already (rank 0; the others keep count).
  void write_checkpoint();
  // The checkpoints callbacks asked for in the hook round that just ended: best.pt, then step-N.pt
  // after the callbacks have seen the loss of the steps since the last step line.
  void write_due_checkpoints();
  void write_best();
  void collect_callback_states();
  // Whether the step loop ends before the next step: the ranks' agreement, or this rank's own stop.
  double schedule_learning_rates();
  bool stops_before_step(bool fed, StepRows& rows);
  void report_steps(double lr);
  bool logs_step(std::int64_t step, bool first) const;
  void end_epoch(std::optional<double> train_loss, double epoch_seconds);
  std::optional<LossWindow> window_loss(double mean_loss) const;
  template <typename Hook>
  void each_callback(const Hook& hook) {
    for (auto& callback : s_.callbacks) hook(*callback);
  }
  // Validation and checkpoints are timed apart, so samples/s and the data stall describe the
  // training steps alone (a long validation would otherwise dilute the stall it is meant to show).
  template <typename Work>
  void paused(const Work& work) {
    const auto start = Clock::now();
    work();
    const double seconds = seconds_since(start);
    totals_.paused_seconds += seconds;
    window_.paused_seconds += seconds;
  }

  // The steps since the last step line: what that line averages over. The loss is summed on the
  // device and read once a line, not once a step (a read waits for the GPU).
  struct StepWindow {
    Clock::time_point start = Clock::now();
    double data_seconds = 0;
    double paused_seconds = 0;  // validation and checkpoints inside the window: not step time
    // One-time set-up steps (the first at each batch shape, where cuDNN's benchmark times its
    // algorithms; a CUDA graph's capture): left out of samples/s and the ETA, which would
    // otherwise extrapolate them.
    double setup_seconds = 0;
    std::int64_t setup_steps = 0, setup_samples = 0;
    std::int64_t steps = 0, samples = 0;
    std::int64_t skipped_before = 0;  // the GradScaler's skipped steps when the window opened
    at::Tensor loss;
    at::Tensor grad_norm;  // the logged step's, measured on the device (logging.grad_norm)
  };

  Trainer::State& s_;
  FitResult& result_;
  RunTotals totals_;
  const data::EpochSampler sampler_;
  StepWindow window_;
  // train.max_time counts the time of fit() calls, those of the runs before a resume included (as
  // their checkpoints recorded it): what this fit() started from, and when.
  const double trained_before_;
  const Clock::time_point fit_start_ = Clock::now();
  // A callback's stop: in effect (the loop ends), or waiting for the ranks to agree on it.
  std::optional<StopReason> stop_, pending_;
  std::string stop_why_;
  std::set<std::int64_t> batch_sizes_seen_;  // a step at a size not seen yet is a set-up step
  // The ranks agreed that train.max_time ran out on some rank's clock: the run has used all of it,
  // though this rank's clock may be a little short of it.
  bool time_up_agreed_ = false;
  bool last_saved_time_limit_ = false;              // that checkpoint recorded the whole train.max_time as used
  bool checkpoint_due_ = false, best_due_ = false;  // asked for by a callback in the current hook round
  bool passing_record_ = false;                     // callbacks' on_record is running: a record added there is not passed on
};

}  // namespace gputrain::train
