#pragma once
// The MLflow side of a run, on a thread of its own so that the step never waits for the server:
// it opens (or reopens) the run, sends the params once and the metrics in batches every second,
// keeps them while the server is down or slow and sends them when it answers again, and at the end
// uploads the run's files and marks its status, waiting for the server no longer than asked.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mlflow_api.hpp"

namespace gputrain::train::mlflow {

struct TrackerPlan {
  std::string tracking_uri;   ///< for the lines it says (the run's page)
  std::string experiment;     ///< the experiment's name; empty: the one `experiment_id` names
  std::string experiment_id;  ///< MLFLOW_EXPERIMENT_ID: the experiment, or the id the named one must have
  std::string run_name;       ///< a new run's name
  std::string resume_run_id;  ///< a run to go on with (from the checkpoint); empty: a new run
  std::string given_run_id;   ///< MLFLOW_RUN_ID: a run made elsewhere to log to, where there is no resume_run_id
  std::vector<Entry> params, tags;
  double first_retry_seconds = 1;  ///< the wait after a failed request, doubled up to 30 s
  double send_every_seconds = 1;   ///< how often buffered metrics are sent
  std::size_t max_buffered = 1'000'000;
};

/// How long the tracker's thread waits before its next try: `send_every_seconds` after a success;
/// after a failure `backoff` (doubled each time, up to 30 s) during the run, but
/// `first_retry_seconds` once the run ends, so that a failed try at the end is repeated within the
/// end's wait instead of after it.
double wait_before_next_try(const TrackerPlan& plan, bool failed, bool finishing, double backoff);

/// A line for the run to say: a warning or a note (console and training.log), or a record
/// (training.log only).
enum class Level { warning, note, record };
struct TrackerMessage {
  Level level = Level::note;
  std::string text;
};

class Tracker {
 public:
  Tracker(std::unique_ptr<Api> api, TrackerPlan plan);
  /// Ends the run as FAILED when finish() was not called (the training failed), waiting at most
  /// `failed_wait_seconds`.
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  /// Queues metrics to send; never blocks on the server.
  void log(std::vector<Metric> metrics);
  /// The run's id once the server made (or reopened) it; empty before.
  std::string run_id() const;
  /// Waits until the first try at opening the run is over (at most one request's timeout when the
  /// server does not answer): so that the first checkpoint keeps the id.
  void wait_for_run();
  /// What happened since the last call, to be said on the training thread.
  std::vector<TrackerMessage> take_messages();
  /// Sends the metrics still buffered, uploads `files` and ends the run with `status` (FINISHED,
  /// KILLED, FAILED), waiting at most `wait_seconds` for the server; what it could not send is
  /// said in a warning (take_messages).
  void finish(const std::string& status, const std::vector<std::string>& files, double wait_seconds);
  double failed_wait_seconds = 10;

 private:
  void work();
  bool open_run();
  bool reopen_run(RunRef& run, const std::string& run_id, bool given);
  std::string find_experiment(std::string& name);
  bool send_params();
  bool send_metrics();
  bool end_run();
  void stop_sending(const ApiError& deleted);
  bool attempt(const std::function<void()>& request);
  void say(Level level, const std::string& text);

  std::unique_ptr<Api> api_;
  TrackerPlan plan_;
  RunRef run_;
  std::vector<Entry> params_to_send_, tags_to_send_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Metric> buffered_;
  std::vector<TrackerMessage> messages_;
  std::size_t dropped_ = 0;
  bool unreachable_ = false, warned_ = false, refused_ = false, disabled_ = false;
  bool tried_opening_ = false, finishing_ = false, finished_ = false, abandoned_ = false, tried_at_end_ = false;
  std::string status_;
  std::vector<std::string> files_;
  std::thread thread_;
};

}  // namespace gputrain::train::mlflow
