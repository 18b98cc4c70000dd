#pragma once
// What a run says, and to whom: the metric sinks (console, training.log, metrics.jsonl,
// TensorBoard) that rank 0 opens at fit()'s start. Lines said during set-up, before the sinks
// exist, wait and are said once they do. Every part of the trainer reports through this one object.

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "gputrain/memory/oom_guard.hpp"
#include "gputrain/train/metrics.hpp"

namespace gputrain::train {

class Reporter {
 public:
  /// Starts the sinks with the run's facts, then says the lines that waited for them.
  void open(std::vector<std::unique_ptr<MetricSink>> sinks, const RunInfo& info);
  /// The same without a run's facts (an evaluation has no run): the sinks get lines and events only.
  void attach(std::vector<std::unique_ptr<MetricSink>> sinks);
  /// Ranks other than 0 say nothing: the lines that waited are dropped.
  void stay_silent() { waiting_.clear(); }
  /// A line said once the sinks exist (now, when they do).
  void later(std::string line);
  /// A line worth keeping: on the console and in training.log.
  void note(const std::string& line);
  /// What the run starts on now ("step 3 of 500"): the console says it is still running when it runs long.
  void working_on(const std::string& what);
  /// The last working_on(): what an error that ends the run interrupted.
  const std::string& doing() const { return doing_; }
  /// How the run ended, for the record (training.log): the command reports the outcome itself.
  void record(const std::string& outcome);
  void step(const StepMetrics& metrics);
  void epoch(const EpochMetrics& metrics);
  /// A callback's record: metrics.jsonl and TensorBoard.
  void add(const MetricRecord& record);
  /// The out-of-memory events `guard` survived (or not) since the last call.
  void oom_events(memory::OomGuard& guard);
  /// training.log is often all that is kept of a batch job: the error that ends a run goes there
  /// too, with its fix, before the sinks close. The command still prints it as "error:".
  void fail(const std::exception& error);
  /// Closes the sinks and lets them go.
  void end();

 private:
  std::vector<std::unique_ptr<MetricSink>> sinks_;
  std::vector<std::string> waiting_;
  std::string doing_;
};

}  // namespace gputrain::train
