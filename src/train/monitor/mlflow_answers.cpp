#include "mlflow_answers.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/web_page.hpp"

namespace gputrain::train::mlflow {
namespace {

constexpr const char* kApiPath = "/api/2.0/mlflow";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// MLflow's own error body: {"error_code": ..., "message": ...}; "" when the body is not one.
std::string mlflow_message(const std::string& body) {
  const auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("error_code")) return "";
  const auto message = parsed.value("message", std::string());
  return message.empty() ? parsed.value("error_code", std::string()) : message;
}

// By its markup: servers label plain text as HTML too (MLflow's own 401 and 403 do).
bool is_web_page(const Answer& a) { return core::looks_like_web_page(a.body); }

// What the server said: MLflow's message, a page's title, or the start of its text.
std::string what_it_said(const Answer& a) {
  if (const auto said = mlflow_message(a.body); !said.empty()) return said;
  const auto gist = core::page_gist(a.body);
  if (gist.empty()) return "an empty answer";
  return is_web_page(a) ? "a web page, '" + gist + "'" : gist;
}

std::string http(const Answer& a) { return "HTTP " + std::to_string(a.status); }

ApiError redirected(const std::string& doing, const Answer& a, const Asker& asker) {
  const auto api = a.location.find(kApiPath);
  if (api != std::string::npos && api > 0 && api < a.location.find('?'))  // the API moved: to https, another port, a prefix
    return ApiError(doing + ": the server at " + asker.tracking_uri + " sends its clients to " + a.location.substr(0, api) + " (" +
                        http(a) + "): set logging.mlflow.tracking_uri to " + a.location.substr(0, api),
                    false);
  return ApiError(doing + ": the server at " + asker.tracking_uri + " answered " + http(a) + ", sending gputrain to " +
                      (a.location.empty() ? std::string("no address") : core::page_gist(a.location)) +
                      ", as a sign-in page in front of MLflow does to a browser; gputrain does not follow it: give "
                      "logging.mlflow.tracking_uri the tracking server's own address, or the credentials the front takes "
                      "(MLFLOW_TRACKING_TOKEN is sent as a bearer token)",
                  false);
}

// http://user:****@host: credentials written in the address (libcurl sends them).
bool has_user_info(const std::string& uri) {
  const auto authority = uri.find("://");
  if (authority == std::string::npos) return false;
  const auto end = uri.find('/', authority + 3);
  return uri.substr(authority + 3, end == std::string::npos ? std::string::npos : end - authority - 3).find('@') != std::string::npos;
}

ApiError unauthenticated(const std::string& doing, const Answer& a, const Asker& asker) {
  std::string fix;
  if (asker.token)
    fix = "the server did not take MLFLOW_TRACKING_TOKEN: check the token and that it has not expired";
  else if (!asker.username.empty())
    fix = "the server did not take the password of MLFLOW_TRACKING_USERNAME='" + asker.username + "': check MLFLOW_TRACKING_PASSWORD";
  else if (has_user_info(asker.tracking_uri))
    fix = "the server did not take the user and password written in the address: check them";
  else
    fix =
        "it asks who is logging: export MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN, as "
        "for MLflow's own clients";
  return ApiError(doing + ": the server answered " + http(a) + " (" + what_it_said(a) + "): " + fix, false);
}

ApiError forbidden(const std::string& doing, const Answer& a, const Asker& asker) {
  const std::string who = asker.username.empty() || asker.token ? "the user these credentials name" : "user '" + asker.username + "'";
  return ApiError(doing + ": the server answered " + http(a) + " (" + what_it_said(a) + "): " + who +
                      " lacks MLflow's permission for it. A user logs to an experiment they may EDIT, which its owner or an "
                      "admin grants, or to a new one, which they then own: set logging.mlflow.experiment to a new name",
                  false);
}

}  // namespace

ApiError refusal(const std::string& doing, const Answer& a, const Asker& asker) {
  if (a.status >= 500 || a.status == 429 || a.status == 408)
    return ApiError(doing + ": the server answered " + http(a) + ": " + what_it_said(a), true);
  if (a.status >= 300 && a.status < 400) return redirected(doing, a, asker);
  if (a.status == 401) return unauthenticated(doing, a, asker);
  if (a.status == 403) return forbidden(doing, a, asker);
  if (a.status == 413)  // MLflow takes files of any size: a proxy in front of it does not
    return ApiError(doing + ": the server answered " + http(a) + " (" + what_it_said(a) +
                        "): a proxy in front of MLflow limits "
                        "the size of a request; raise its limit (nginx: client_max_body_size) for " +
                        asker.tracking_uri,
                    false);
  if (a.status == 404 && mlflow_message(a.body).empty())  // MLflow's own 404s say what is missing, in JSON
    return ApiError(doing + ": " + asker.tracking_uri + " has no MLflow tracking API at " + kApiPath + " (" + http(a) + ", " +
                        what_it_said(a) +
                        "): give logging.mlflow.tracking_uri the address `mlflow server` listens on, "
                        "with the path prefix a proxy serves it under (http://host/mlflow)",
                    false);
  return ApiError(doing + ": the server answered " + http(a) + ": " + what_it_said(a), false);
}

ApiError not_mlflow(const std::string& doing, const Answer& a, const Asker& asker) {
  return ApiError(doing + ": " + asker.tracking_uri + " answered with " + what_it_said(a) +
                      ", where MLflow answers JSON: something else is at that address (a sign-in page in front of "
                      "MLflow, another web server). Give logging.mlflow.tracking_uri the tracking server's own address, or "
                      "the credentials the front takes (MLFLOW_TRACKING_TOKEN is sent as a bearer token)",
                  false);
}

ApiError deleted_experiment(const std::string& name, const std::string& id, const Asker& asker) {
  return ApiError("experiment '" + name + "' is deleted on the server at " + asker.tracking_uri +
                      " (in its trash, where the name stays taken): restore it (MLFLOW_TRACKING_URI=" + asker.tracking_uri +
                      " mlflow experiments restore --experiment-id " + id + ") or set logging.mlflow.experiment to a new name",
                  false);
}

ApiError no_experiment_with_id(const std::string& id, const std::string& said, const Asker& asker) {
  return ApiError("MLFLOW_EXPERIMENT_ID is '" + id + "', but the server at " + asker.tracking_uri + " has no such experiment (" + said +
                      "): give the id its page shows (" + asker.tracking_uri +
                      "/#/experiments/ID), or unset it and name "
                      "the experiment in logging.mlflow.experiment",
                  false);
}

ApiError experiment_id_mismatch(const std::string& name, const std::string& found_id, const std::string& env_id) {
  return ApiError("MLFLOW_EXPERIMENT_ID is '" + env_id + "', but experiment '" + name + "', which MLFLOW_EXPERIMENT_NAME names, has id " +
                      found_id + " (MLflow's clients refuse the two when they disagree): unset one of them",
                  false);
}

ApiError deleted_run(const std::string& run_id, const Asker& asker, const std::string& deleted_experiment_id,
                     const std::string& experiment_name) {
  if (!deleted_experiment_id.empty())
    return ApiError("run " + run_id + " is deleted on the server at " + asker.tracking_uri + " with its experiment '" + experiment_name +
                        "' (MLFLOW_TRACKING_URI=" + asker.tracking_uri + " mlflow experiments restore --experiment-id " +
                        deleted_experiment_id + " brings both back)",
                    false, true);
  return ApiError("run " + run_id + " is deleted on the server at " + asker.tracking_uri + " (MLFLOW_TRACKING_URI=" + asker.tracking_uri +
                      " mlflow runs restore --run-id " + run_id + " brings it back)",
                  false, true);
}

ApiError speaks_plain_http(const std::string& detail, const Asker& asker) {
  auto plain = asker.tracking_uri;
  if (plain.rfind("https://", 0) == 0) plain.erase(4, 1);
  return ApiError(
      "the server at " + asker.tracking_uri + " speaks plain HTTP, not TLS (" + detail + "): set logging.mlflow.tracking_uri to " + plain,
      false);
}

bool is_plain_http_handshake(const std::string& detail) { return lower(detail).find("wrong version number") != std::string::npos; }

ApiError speaks_tls(const Asker& asker) {
  auto secure = asker.tracking_uri;
  if (secure.rfind("http://", 0) == 0) secure.insert(4, "s");
  return ApiError("the server at " + asker.tracking_uri +
                      " speaks TLS on that port and sent nothing back to plain HTTP: set "
                      "logging.mlflow.tracking_uri to " +
                      secure,
                  false);
}

}  // namespace gputrain::train::mlflow
