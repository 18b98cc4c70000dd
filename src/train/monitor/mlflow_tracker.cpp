#include "mlflow_tracker.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "core/build_features.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "gputrain/core/units.hpp"
#include "mlflow_answers.hpp"

namespace gputrain::train::mlflow {
namespace {

std::chrono::milliseconds millis(double seconds) { return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000)); }

// MLflow refuses a param value longer than its limit: the start, cut between two characters (the
// request is JSON, UTF-8), and a mark of the cut.
Entry within_limits(Entry param) {
  if (param.second.size() <= kMaxParamValue) return param;
  std::size_t cut = kMaxParamValue - 3;
  while (cut > 0 && (static_cast<unsigned char>(param.second[cut]) & 0xC0) == 0x80) --cut;  // inside a character
  param.second = param.second.substr(0, cut) + "...";
  return param;
}

// The server takes UTF-8 only: a name or value that is not (a path typed on a Latin-1 system) is
// read as Windows-1252, the same way each time, so a resume finds the experiment it made.
TrackerPlan plan_in_utf8(TrackerPlan plan) {
  plan.experiment = core::as_utf8(plan.experiment);
  plan.run_name = core::as_utf8(plan.run_name);
  for (auto* entries : {&plan.params, &plan.tags})
    for (auto& [key, value] : *entries) key = core::as_utf8(key), value = core::as_utf8(value);
  return plan;
}

}  // namespace

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

#if !GPUTRAIN_HAVE_CURL
std::unique_ptr<Api> make_rest_api(const Connection&) {
  throw UsageError("logging.mlflow is set, but this build of gputrain has no libcurl to reach the server",
                   "install libcurl (Debian: apt-get install libcurl4-openssl-dev) and rebuild, or remove logging.mlflow");
}

std::string url_fault(const std::string&) { return ""; }  // make_rest_api says what is missing
#endif

Tracker::Tracker(std::unique_ptr<Api> api, TrackerPlan plan) : api_(std::move(api)), plan_(plan_in_utf8(std::move(plan))) {
  thread_ = std::thread([this] { work(); });
}

Tracker::~Tracker() {
  if (thread_.joinable()) finish("FAILED", {}, failed_wait_seconds);
}

void Tracker::log(std::vector<Metric> metrics) {
  std::lock_guard lock(mutex_);
  if (disabled_ || finishing_) return;
  for (auto& metric : metrics) {
    if (buffered_.size() >= plan_.max_buffered) {
      ++dropped_;  // kept from the start of the outage: the newest wait for room
      continue;
    }
    buffered_.push_back(std::move(metric));
  }
  if (buffered_.size() >= kMaxMetricsPerBatch) wake_.notify_one();
}

std::string Tracker::run_id() const {
  std::lock_guard lock(mutex_);
  return run_.run_id;
}

void Tracker::wait_for_run() {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return tried_opening_; });
}

std::vector<TrackerMessage> Tracker::take_messages() {
  std::lock_guard lock(mutex_);
  return std::exchange(messages_, {});
}

void Tracker::say(Level level, const std::string& text) {
  std::lock_guard lock(mutex_);
  messages_.push_back({level, text});
}

void Tracker::finish(const std::string& status, const std::vector<std::string>& files, double wait_seconds) {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return;
  finishing_ = true;
  status_ = status;
  files_ = files;
  wake_.notify_all();
  done_.wait_for(lock, millis(wait_seconds), [&] { return finished_; });
  const bool gave_up = !finished_;
  abandoned_ = true;
  const std::size_t unsent = buffered_.size();
  lock.unlock();
  api_->cancel();  // a request still waiting for the server ends now
  wake_.notify_all();
  thread_.join();
  // The console has one warning for a server that is away: this one goes to training.log then.
  if (gave_up)
    say(warned_ ? Level::record : Level::warning, "mlflow: the server at " + plan_.tracking_uri + " did not answer within " +
                                                      std::to_string(int(wait_seconds)) + " s at the run's end: " + std::to_string(unsent) +
                                                      " metrics and the run's files were not sent" + " and the run is not marked " +
                                                      status + " there (metrics.jsonl has every figure)");
  if (dropped_ > 0)
    say(Level::warning, "mlflow: " + std::to_string(dropped_) + " metrics were left out while the server was away (" +
                            std::to_string(plan_.max_buffered) + " are kept); metrics.jsonl has them");
}

double wait_before_next_try(const TrackerPlan& plan, bool failed, bool finishing, double backoff) {
  if (!failed) return plan.send_every_seconds;
  return finishing ? plan.first_retry_seconds : backoff;
}

void Tracker::work() {
  double backoff = plan_.first_retry_seconds;
  bool failed = false;
  std::unique_lock lock(mutex_);
  while (!abandoned_) {
    // The end is tried at once even in a backoff: a server back since the last failure must not
    // miss the run's last metrics and status because the next retry was due after the deadline.
    wake_.wait_for(lock, millis(wait_before_next_try(plan_, failed, finishing_, backoff)), [&] {
      return abandoned_ || !tried_opening_ || (finishing_ && !tried_at_end_) ||
             (!failed && (finishing_ || buffered_.size() >= kMaxMetricsPerBatch));
    });
    if (abandoned_) break;
    const bool finishing = finishing_;
    tried_at_end_ = tried_at_end_ || finishing;
    lock.unlock();
    const bool opened = disabled_ || open_run();
    lock.lock();
    tried_opening_ = true;
    done_.notify_all();
    lock.unlock();
    const bool sent = opened && (disabled_ || (send_params() && send_metrics() && (!finishing || end_run())));
    lock.lock();
    if (sent && finishing) {
      finished_ = true;
      done_.notify_all();
      break;
    }
    failed = !sent;
    backoff = sent ? plan_.first_retry_seconds : std::min(backoff * 2, 30.0);
  }
}

// Runs one request: true when it went through; false when the server did not answer (said once,
// retried later); an ApiError when it refused.
bool Tracker::attempt(const std::function<void()>& request) {
  try {
    request();
  } catch (const ApiError& e) {
    if (!e.retry()) throw;
    if (!unreachable_)
      say(warned_ ? Level::record : Level::warning,
          "mlflow: " + std::string(e.what()) + ": training goes on, and its metrics are kept and sent once the server answers");
    unreachable_ = warned_ = true;
    return false;
  } catch (const std::exception& e) {  // an answer that is not MLflow's JSON
    throw ApiError(std::string("an answer gputrain cannot read: ") + e.what(), false);
  }
  if (unreachable_) say(Level::record, "mlflow: the server at " + plan_.tracking_uri + " answers again");
  unreachable_ = false;
  return true;
}

bool Tracker::open_run() {
  if (!run_id().empty()) return true;
  RunRef run;
  try {
    // The checkpoint's run wins over MLFLOW_RUN_ID: the resume of a run goes on where it logged.
    const bool given = plan_.resume_run_id.empty() && !plan_.given_run_id.empty();
    const auto& earlier = given ? plan_.given_run_id : plan_.resume_run_id;
    if (!earlier.empty() && !reopen_run(run, earlier, given)) return false;
    if (run.run_id.empty()) {
      std::string experiment, name;
      if (!attempt([&] { experiment = find_experiment(name); })) return false;
      if (!attempt([&] { run = api_->create_run(experiment, plan_.run_name, now_ms(), plan_.tags); })) return false;
      for (const auto& param : plan_.params) params_to_send_.push_back(within_limits(param));
      say(Level::note, "mlflow: run '" + plan_.run_name + "' in experiment '" + name + "': " + plan_.tracking_uri + "/#/experiments/" +
                           run.experiment_id + "/runs/" + run.run_id);
    }
  } catch (const ApiError& e) {
    say(Level::warning,
        "mlflow: " + std::string(e.what()) + "; the run goes on without MLflow (metrics.jsonl and TensorBoard have every figure)");
    std::lock_guard lock(mutex_);
    disabled_ = true;
    buffered_.clear();
    return false;
  }
  std::lock_guard lock(mutex_);
  run_ = run;
  return true;
}

// The experiment's id, and its name in `name`: the one plan_.experiment names (made if missing), or
// the one MLFLOW_EXPERIMENT_ID alone names; where both are set they must agree, as in MLflow's clients.
std::string Tracker::find_experiment(std::string& name) {
  if (plan_.experiment.empty()) {
    name = api_->experiment_name(plan_.experiment_id);
    return plan_.experiment_id;
  }
  name = plan_.experiment;
  const auto id = api_->experiment_id(plan_.experiment);
  if (!plan_.experiment_id.empty() && id != plan_.experiment_id) throw experiment_id_mismatch(name, id, plan_.experiment_id);
  return id;
}

// The run a resumed training logged to, or the one MLFLOW_RUN_ID gives (`given`): its params are
// sent again only where new (MLflow keeps a param's first value); a run the server no longer has
// leaves `run` empty, and a new one is made.
bool Tracker::reopen_run(RunRef& run, const std::string& run_id, bool given) {
  std::vector<Entry> logged;
  try {
    if (!attempt([&] { run = api_->reopen_run(run_id, logged); })) return false;
  } catch (const ApiError& e) {
    if (given)  // a pipeline waits for this run's figures in that run: worth more than a note
      say(Level::warning,
          "mlflow: MLFLOW_RUN_ID names run " + run_id + ", which cannot take this run's figures (" + e.what() + "): logging to a new run");
    else
      say(Level::note, "mlflow: cannot go on with run " + run_id + " (" + e.what() + "): logging to a new run");
    run = {};
    return true;
  }
  // A run made elsewhere gets gputrain's own tags (what trained, on what); its source stays its maker's.
  if (given)
    for (const auto& tag : plan_.tags)
      if (tag.first.rfind("gputrain.", 0) == 0) tags_to_send_.push_back(tag);
  std::map<std::string, std::string> before(logged.begin(), logged.end());
  std::vector<std::string> changed;
  for (const auto& param : plan_.params) {
    const auto value = within_limits(param).second;
    const auto found = before.find(param.first);
    if (found == before.end())
      params_to_send_.emplace_back(param.first, value);
    else if (found->second != value)
      changed.push_back(param.first + " (" + found->second + " -> " + value + ")");
  }
  std::string line = (given ? "mlflow: logging to run " + run.run_id + ", which MLFLOW_RUN_ID names: "
                            : "mlflow: going on with run " + run.run_id + ": ") +
                     plan_.tracking_uri + "/#/experiments/" + run.experiment_id + "/runs/" + run.run_id;
  if (!changed.empty()) {
    line += "; MLflow keeps a param's first value, so these show the run's start: ";
    line += core::join_some(changed, 5);
  }
  say(Level::note, line);
  return true;
}

bool Tracker::send_params() {
  while (!params_to_send_.empty() || !tags_to_send_.empty()) {  // the tags (a few) go with the first params
    const auto count = std::min(params_to_send_.size(), kMaxParamsPerBatch);
    const std::vector<Entry> batch(params_to_send_.begin(), params_to_send_.begin() + static_cast<std::ptrdiff_t>(count));
    try {
      if (!attempt([&] { api_->log_batch(run_.run_id, {}, batch, tags_to_send_); })) return false;
    } catch (const ApiError& e) {
      if (e.run_deleted()) return stop_sending(e), true;
      say(Level::warning, "mlflow: the server refused " + std::to_string(count) + " params" +
                              (tags_to_send_.empty() ? "" : " and gputrain's tags") + ": " + e.what());
    }
    params_to_send_.erase(params_to_send_.begin(), params_to_send_.begin() + static_cast<std::ptrdiff_t>(count));
    tags_to_send_.clear();
  }
  return true;
}

bool Tracker::send_metrics() {
  while (!disabled_) {
    std::vector<Metric> batch;
    {
      std::lock_guard lock(mutex_);
      const auto count = std::min(buffered_.size(), kMaxMetricsPerBatch);
      batch.assign(buffered_.begin(), buffered_.begin() + static_cast<std::ptrdiff_t>(count));
    }
    if (batch.empty()) return true;
    try {
      if (!attempt([&] { api_->log_batch(run_.run_id, batch, {}, {}); })) return false;
    } catch (const ApiError& e) {
      if (e.run_deleted()) return stop_sending(e), true;
      if (!refused_) say(Level::warning, "mlflow: the server refused " + std::to_string(batch.size()) + " metrics: " + e.what());
      refused_ = true;
    }
    std::lock_guard lock(mutex_);  // only log() touches the queue meanwhile, at its back
    buffered_.erase(buffered_.begin(), buffered_.begin() + static_cast<std::ptrdiff_t>(batch.size()));
  }
  return true;
}

// A run deleted on the server takes nothing more: said once, and nothing more is sent (the run's
// id stays in the checkpoints: restored, a resume logs on in it).
void Tracker::stop_sending(const ApiError& deleted) {
  say(Level::warning, "mlflow: " + std::string(deleted.what()) + ": nothing more is sent to it (metrics.jsonl has every figure)");
  std::lock_guard lock(mutex_);
  disabled_ = true;
  buffered_.clear();
}

// The run's files, then its status: a file the server refuses is said and left out.
bool Tracker::end_run() {
  if (disabled_) return true;
  // One line for the files refused for one reason (a server that cannot take files refuses all).
  std::vector<std::pair<std::string, std::vector<std::string>>> refusals;
  const auto say_refusals = [&] {
    for (const auto& [why, files] : refusals)
      say(Level::warning, "mlflow: " + core::join(files) + (files.size() == 1 ? " was" : " were") + " not uploaded: " + why);
  };
  while (!files_.empty()) {
    try {
      if (!attempt([&] { api_->upload_artifact(run_, files_.front()); })) {
        say_refusals();
        return false;
      }
    } catch (const ApiError& e) {
      if (refusals.empty() || refusals.back().first != e.what()) refusals.push_back({e.what(), {}});
      refusals.back().second.push_back(files_.front());
    }
    files_.erase(files_.begin());
  }
  say_refusals();
  try {
    return attempt([&] { api_->end_run(run_.run_id, status_, now_ms()); });
  } catch (const ApiError& e) {
    if (e.run_deleted()) return stop_sending(e), true;
    say(Level::warning, "mlflow: the run could not be marked " + status_ + ": " + e.what());
    return true;
  }
}

}  // namespace gputrain::train::mlflow
