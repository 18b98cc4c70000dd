// The MLflow REST API over libcurl: JSON requests to /api/2.0/mlflow, files to the artifact proxy
// (/api/2.0/mlflow-artifacts, which `mlflow server` serves by default). One connection, kept open,
// used from the tracker's thread only; cancel() may come from any thread.
#include <curl/curl.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json_text.hpp"
#include "data/postgres/dsn.hpp"
#include "gputrain/core/env.hpp"
#include "mlflow_answers.hpp"
#include "mlflow_api.hpp"
#include "train/config/mlflow_settings.hpp"

namespace gputrain::train::mlflow {
namespace {

using nlohmann::json;

std::size_t collect(char* data, std::size_t size, std::size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// libcurl asks this every so often during a transfer: non-zero ends it (cancel()).
int keep_going(void* cancelled, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(cancelled)->load() ? 1 : 0;
}

json entries(const std::vector<Entry>& list) {
  json out = json::array();
  for (const auto& [key, value] : list) out.push_back({{"key", key}, {"value", value}});
  return out;
}

// mlflow-artifacts:/1/<run>/artifacts (or mlflow-artifacts://host:port/1/...) -> 1/<run>/artifacts.
std::string proxied_path(const std::string& artifact_uri) {
  const std::string scheme = "mlflow-artifacts:";
  if (artifact_uri.rfind(scheme, 0) != 0)
    throw ApiError("the server keeps this run's files at " + artifact_uri +
                       ", where gputrain cannot write; start the server with --serve-artifacts (its default since MLflow 2)",
                   false);
  std::string path = artifact_uri.substr(scheme.size());
  if (path.rfind("//", 0) == 0) path = path.substr(std::min(path.size(), path.find('/', 2)));
  while (!path.empty() && path.front() == '/') path.erase(0, 1);
  return path;
}

class RestApi final : public Api {
 public:
  explicit RestApi(const Connection& connection) : connection_(connection) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_ = curl_easy_init();
    if (!curl_) throw ApiError("libcurl could not start a connection", false);
    const auto user = core::env("MLFLOW_TRACKING_USERNAME").value_or("");
    const auto token = tracking_token();
    if (token) {
      authorization_ = "Authorization: Bearer " + *token;
    } else if (!user.empty()) {  // set but empty is unset, as MLflow's clients read it
      user_password_ = user + ":" + core::env("MLFLOW_TRACKING_PASSWORD").value_or("");
    }
    tls_ = tls_settings();
    asker_ = {data::postgres::mask_password(connection.tracking_uri), user, token.has_value()};
  }
  ~RestApi() override { curl_easy_cleanup(curl_); }

  std::string experiment_id(const std::string& name) override {
    for (int attempt = 0; attempt < 2; ++attempt) {
      const std::string query = "experiments/get-by-name?experiment_name=" + escaped(name);
      const std::string finding = "finding experiment '" + name + "'";
      const auto found = request("GET", query, "");
      if (found.status == 200) {
        const auto experiment = parsed(finding, found).at("experiment");
        const auto id = experiment.at("experiment_id").get<std::string>();
        if (experiment.value("lifecycle_stage", "") == "deleted") throw deleted_experiment(name, id, asker_);
        return id;
      }
      if (error_code(found) != "RESOURCE_DOES_NOT_EXIST") fail(finding, found);
      const std::string creating = "creating experiment '" + name + "'";
      const auto made = request("POST", "experiments/create", core::json_text(json{{"name", name}}));
      if (made.status == 200) return parsed(creating, made).at("experiment_id").get<std::string>();
      if (error_code(made) != "RESOURCE_ALREADY_EXISTS") fail(creating, made);
    }  // another client made it between our two requests: find it again
    throw ApiError("experiment '" + name + "' could be neither found nor created", true);
  }

  std::string experiment_name(const std::string& id) override {
    const std::string finding = "finding experiment " + id;
    const auto found = request("GET", "experiments/get?experiment_id=" + escaped(id), "");
    if ((found.status == 404 || found.status == 400) && !error_code(found).empty())  // MLflow's own "no such experiment"
      throw no_experiment_with_id(id, parsed(finding, found).value("message", error_code(found)), asker_);
    if (found.status != 200) fail(finding, found);
    const auto experiment = parsed(finding, found).at("experiment");
    const auto name = experiment.at("name").get<std::string>();
    if (experiment.value("lifecycle_stage", "") == "deleted") throw deleted_experiment(name, id, asker_);
    return name;
  }

  RunRef create_run(const std::string& experiment_id, const std::string& run_name, std::int64_t start_ms,
                    const std::vector<Entry>& tags) override {
    const json body{{"experiment_id", experiment_id}, {"run_name", run_name}, {"start_time", start_ms}, {"tags", entries(tags)}};
    const auto made = request("POST", "runs/create", core::json_text(body));
    if (made.status != 200) fail("creating a run", made);
    return run_ref(parsed("creating a run", made).at("run").at("info"));
  }

  RunRef reopen_run(const std::string& run_id, std::vector<Entry>& params) override {
    const auto found = request("GET", "runs/get?run_id=" + run_id, "");
    if (found.status != 200) fail("finding run " + run_id, found);
    const auto run = parsed("finding run " + run_id, found).at("run");
    if (run.at("info").value("lifecycle_stage", "") == "deleted") throw gone(run_id, run.at("info"));
    for (const auto& param : run.value("data", json::object()).value("params", json::array()))
      params.emplace_back(param.at("key").get<std::string>(), param.value("value", ""));
    const auto updated = request("POST", "runs/update", core::json_text(json{{"run_id", run_id}, {"status", "RUNNING"}}));
    if (updated.status != 200) fail("marking run " + run_id + " as running", updated);
    return run_ref(run.at("info"));
  }

  void log_batch(const std::string& run_id, const std::vector<Metric>& metrics, const std::vector<Entry>& params,
                 const std::vector<Entry>& tags) override {
    json list = json::array();
    for (const auto& m : metrics) list.push_back({{"key", m.key}, {"value", m.value}, {"timestamp", m.timestamp_ms}, {"step", m.step}});
    const json body{{"run_id", run_id}, {"metrics", list}, {"params", entries(params)}, {"tags", entries(tags)}};
    const auto logged = request("POST", "runs/log-batch", core::json_text(body));
    if (logged.status != 200) fail_for_run(run_id, "logging to run " + run_id, logged);
  }

  void upload_artifact(const RunRef& run, const std::string& file) override {
    const std::string name = std::filesystem::path(file).filename().string();
    std::unique_ptr<FILE, int (*)(FILE*)> in(std::fopen(file.c_str(), "rb"), &std::fclose);
    if (!in) throw ApiError("cannot read " + file + " to upload it", false);
    curl_easy_reset(curl_);
    curl_easy_setopt(curl_, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl_, CURLOPT_READDATA, in.get());
    curl_easy_setopt(curl_, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(std::filesystem::file_size(file)));
    // A large file takes as long as the link needs, but a stalled upload gives up.
    curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_TIME, static_cast<long>(connection_.timeout_seconds));
    const auto sent = perform(
        connection_.tracking_uri + "/api/2.0/mlflow-artifacts/artifacts/" + proxied_path(run.artifact_uri) + "/" + name, "PUT", "", false);
    if (sent.status != 200) fail("uploading " + name, sent);
  }

  void end_run(const std::string& run_id, const std::string& status, std::int64_t end_ms) override {
    const auto updated =
        request("POST", "runs/update", core::json_text(json{{"run_id", run_id}, {"status", status}, {"end_time", end_ms}}));
    if (updated.status != 200) fail_for_run(run_id, "ending run " + run_id, updated);
  }

  void cancel() override { cancelled_ = true; }

 private:
  static RunRef run_ref(const json& info) {
    return {info.at("run_id").get<std::string>(), info.at("experiment_id").get<std::string>(), info.value("artifact_uri", "")};
  }

  // `text` as a URL's query value: a name may hold spaces, '&' or '#'.
  std::string escaped(const std::string& text) const {
    const std::unique_ptr<char, void (*)(void*)> out(curl_easy_escape(curl_, text.c_str(), static_cast<int>(text.size())), curl_free);
    return out ? out.get() : "";
  }

  static std::string error_code(const Answer& r) {
    const auto body = json::parse(r.body, nullptr, false);
    return body.is_object() ? body.value("error_code", "") : "";
  }

  // What the server said (or that it said nothing), as an ApiError: retried unless it refused.
  [[noreturn]] void fail(const std::string& doing, const Answer& r) const {
    if (r.status == 0) throw ApiError(doing + ": no answer from " + asker_.tracking_uri + " (" + r.body + ")", true);
    throw refusal(doing, r, asker_);
  }

  // A refusal to log to a run may be for a run deleted meanwhile (MLflow says only "must be in the
  // 'active' state", in words that change between versions): the run's own record says.
  [[noreturn]] void fail_for_run(const std::string& run_id, const std::string& doing, const Answer& r) {
    if (r.status >= 400 && r.status < 500 && r.status != 408 && r.status != 429) {
      const auto found = request("GET", "runs/get?run_id=" + run_id, "");
      const auto run = json::parse(found.body, nullptr, false);
      const auto info = run.is_object() ? run.value("run", json::object()).value("info", json::object()) : json::object();
      if (found.status == 200 && info.value("lifecycle_stage", "") == "deleted") throw gone(run_id, info);
    }
    fail(doing, r);
  }

  // A deleted run, with its experiment where that was deleted too (deleting one deletes its runs).
  ApiError gone(const std::string& run_id, const json& info) {
    const auto experiment_id = info.value("experiment_id", "");
    const auto found = request("GET", "experiments/get?experiment_id=" + escaped(experiment_id), "");
    const auto experiment = json::parse(found.body, nullptr, false);
    const auto fields = experiment.is_object() ? experiment.value("experiment", json::object()) : json::object();
    if (found.status == 200 && fields.value("lifecycle_stage", "") == "deleted")
      return deleted_run(run_id, asker_, experiment_id, fields.value("name", ""));
    return deleted_run(run_id, asker_);
  }

  // A 200's body as MLflow's JSON; anything else (a sign-in page's HTML) is named as not MLflow.
  json parsed(const std::string& doing, const Answer& r) const {
    auto body = json::parse(r.body, nullptr, false);
    if (!body.is_object()) throw not_mlflow(doing, r, asker_);
    return body;
  }

  Answer request(const std::string& method, const std::string& path, const std::string& body) {
    curl_easy_reset(curl_);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, static_cast<long>(connection_.timeout_seconds * 1000));
    return perform(connection_.tracking_uri + "/api/2.0/mlflow/" + path, method, body, true);
  }

  Answer perform(const std::string& url, const std::string& method, const std::string& body, bool json_body) {
    Answer response;
    if (cancelled_) {
      response.body = "cancelled at the run's end";
      return response;
    }
    curl_slist* headers = nullptr;
    if (json_body) headers = curl_slist_append(headers, "Content-Type: application/json");
    if (!authorization_.empty()) headers = curl_slist_append(headers, authorization_.c_str());
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, &curl_slist_free_all);
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: we are not the main thread
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connection_.timeout_seconds * 1000));
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, header_list.get());
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl_, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl_, CURLOPT_XFERINFOFUNCTION, keep_going);
    curl_easy_setopt(curl_, CURLOPT_XFERINFODATA, &cancelled_);
    if (!user_password_.empty()) curl_easy_setopt(curl_, CURLOPT_USERPWD, user_password_.c_str());
    set_tls_options();
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error);
    if (method == "POST") {
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.c_str());
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
    const CURLcode code = curl_easy_perform(curl_);
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, nullptr);  // `error` ends here
    if (code != CURLE_OK) {
      if (!cancelled_) refuse_on_tls(code, error);
      if (!cancelled_ && code == CURLE_GOT_NOTHING && speaks_tls_instead()) throw speaks_tls(asker_);
      response.body = cancelled_ ? "cancelled at the run's end" : (*error ? error : curl_easy_strerror(code));
      return response;
    }
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &response.status);
    const char* location = nullptr;
    if (curl_easy_getinfo(curl_, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location) response.location = location;
    return response;
  }

  void set_tls_options() {
    if (tls_.insecure) {
      curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (!tls_.server_cert.empty()) curl_easy_setopt(curl_, CURLOPT_CAINFO, tls_.server_cert.c_str());
    if (!tls_.client_cert.empty()) curl_easy_setopt(curl_, CURLOPT_SSLCERT, tls_.client_cert.c_str());  // its key in it too
  }

  // A certificate the link cannot check, or ours it cannot use, is no server away: retrying never helps.
  void refuse_on_tls(CURLcode code, const char* detail) const {
    const std::string detail_text = *detail ? detail : curl_easy_strerror(code);
    const std::string said = " (" + detail_text + ")";
    const auto& where = asker_.tracking_uri;
    if (code == CURLE_PEER_FAILED_VERIFICATION)
      throw ApiError("the server at " + where + " has a TLS certificate this machine does not trust" + said +
                         ": set MLFLOW_TRACKING_SERVER_CERT_PATH to the CA certificate (PEM) that signed it, as MLflow's clients "
                         "take it, or MLFLOW_TRACKING_INSECURE_TLS=true to skip the check",
                     false);
    if (code == CURLE_SSL_CONNECT_ERROR && is_plain_http_handshake(detail_text)) throw speaks_plain_http(detail_text, asker_);
    if (code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_CERTPROBLEM)
      throw ApiError("a certificate for the TLS link to " + where + " cannot be used" + said +
                         ": MLFLOW_TRACKING_SERVER_CERT_PATH and MLFLOW_TRACKING_CLIENT_CERT_PATH must name PEM files",
                     false);
  }

  // An http:// server that sent nothing back may speak TLS on that port (uvicorn's --ssl-certfile
  // does so): one handshake, certificate unchecked, says. Asked once: a server that dies mid-answer
  // sends nothing too, and is retried as any server away.
  bool speaks_tls_instead() {
    if (probed_tls_ || connection_.tracking_uri.rfind("http://", 0) != 0) return false;
    probed_tls_ = true;
    const std::unique_ptr<CURL, void (*)(CURL*)> probe(curl_easy_init(), curl_easy_cleanup);
    if (!probe) return false;
    const auto url = "https://" + connection_.tracking_uri.substr(7) + "/health";
    curl_easy_setopt(probe.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(probe.get(), CURLOPT_NOBODY, 1L);
    curl_easy_setopt(probe.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(probe.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(connection_.timeout_seconds * 1000));
    curl_easy_setopt(probe.get(), CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(probe.get(), CURLOPT_SSL_VERIFYHOST, 0L);
    return curl_easy_perform(probe.get()) == CURLE_OK;
  }

  Connection connection_;
  Asker asker_;
  bool probed_tls_ = false;
  TlsSettings tls_;
  CURL* curl_ = nullptr;
  std::atomic<bool> cancelled_{false};
  std::string authorization_, user_password_;
};

}  // namespace

std::unique_ptr<Api> make_rest_api(const Connection& connection) { return std::make_unique<RestApi>(connection); }

std::string url_fault(const std::string& url) {
  const std::unique_ptr<CURLU, void (*)(CURLU*)> parsed(curl_url(), curl_url_cleanup);
  if (!parsed) return "libcurl could not allocate its URL parser";
  const auto code = curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0);
  return code == CURLUE_OK ? "" : curl_url_strerror(code);
}

}  // namespace gputrain::train::mlflow
