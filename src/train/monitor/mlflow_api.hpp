#pragma once
// What gputrain asks of an MLflow tracking server (its REST API, /api/2.0/mlflow): an experiment
// by name, a run, batches of metrics, params and tags, the run's files and its end. The server is
// reached over libcurl (mlflow_rest.cpp); the tracker (mlflow_tracker.hpp) only sees this seam, so
// its buffering and retries are tested without one.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gputrain::train::mlflow {

struct Metric {
  std::string key;
  double value = 0;
  std::int64_t timestamp_ms = 0;
  std::int64_t step = 0;
};

/// A param or a tag.
using Entry = std::pair<std::string, std::string>;

struct RunRef {
  std::string run_id, experiment_id;
  std::string artifact_uri;  ///< where the server keeps its files: mlflow-artifacts:/1/<run>/artifacts
};

/// A request the server did not carry out. `retry`: no answer (down, slow, a 5xx, 429), so the same
/// request may succeed later; else the server refused it (a 4xx), and it never will. `run_deleted`:
/// the refusal was for a run deleted on the server, so nothing more can be logged to it.
class ApiError : public std::runtime_error {
 public:
  ApiError(const std::string& what, bool retry, bool run_deleted = false)
      : std::runtime_error(what), retry_(retry), run_deleted_(run_deleted) {}
  bool retry() const { return retry_; }
  bool run_deleted() const { return run_deleted_; }

 private:
  bool retry_, run_deleted_;
};

/// Limits of the REST API's log-batch (MLflow's documented ones).
inline constexpr std::size_t kMaxMetricsPerBatch = 1000;
inline constexpr std::size_t kMaxParamsPerBatch = 100;
inline constexpr std::size_t kMaxParamValue = 6000;

class Api {
 public:
  virtual ~Api() = default;
  /// The experiment's id, made when there is none by that name.
  virtual std::string experiment_id(const std::string& name) = 0;
  /// The name of the experiment with this id (MLFLOW_EXPERIMENT_ID); refused when there is none.
  virtual std::string experiment_name(const std::string& id) = 0;
  virtual RunRef create_run(const std::string& experiment_id, const std::string& run_name, std::int64_t start_ms,
                            const std::vector<Entry>& tags) = 0;
  /// An existing run (a resumed one), marked as running again; `params` gets what it logged before.
  virtual RunRef reopen_run(const std::string& run_id, std::vector<Entry>& params) = 0;
  virtual void log_batch(const std::string& run_id, const std::vector<Metric>& metrics, const std::vector<Entry>& params,
                         const std::vector<Entry>& tags) = 0;
  /// Uploads `file` into the run's artifacts under its file name.
  virtual void upload_artifact(const RunRef& run, const std::string& file) = 0;
  /// status: FINISHED, FAILED or KILLED.
  virtual void end_run(const std::string& run_id, const std::string& status, std::int64_t end_ms) = 0;
  /// Makes a request in progress, and every later one, give up at once (ApiError with retry):
  /// the run's end does not wait on a server past its deadline. From any thread.
  virtual void cancel() = 0;
};

/// How to reach the server: MLflow's environment variables for credentials, as its clients read them
/// (MLFLOW_TRACKING_TOKEN, else MLFLOW_TRACKING_USERNAME and _PASSWORD).
struct Connection {
  std::string tracking_uri;  ///< http(s)://host:port, no trailing slash
  double timeout_seconds = 10;
};

/// Milliseconds since the epoch: MLflow's timestamps.
std::int64_t now_ms();

/// The libcurl client. Throws gputrain::Error when this build has no libcurl.
std::unique_ptr<Api> make_rest_api(const Connection& connection);

/// What libcurl's URL parser finds wrong with `url` ("No host part in the URL", "Bad IPv6
/// address", a port past 65535), or "" when it is an address to connect to (or there is no libcurl).
std::string url_fault(const std::string& url);

}  // namespace gputrain::train::mlflow
