#include "mlflow_settings.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "data/postgres/dsn.hpp"
#include "gputrain/core/env.hpp"
#include "gputrain/core/error.hpp"
#include "train/monitor/mlflow_api.hpp"

namespace gputrain::train {

void resolve_mlflow_settings(MlflowConfig& mlflow) {
  // The environment names the server only for a config that asks for MLflow: a variable left set
  // in a shell must not make every run log somewhere.
  const bool asked = !mlflow.tracking_uri.empty() || !mlflow.experiment.empty() || !mlflow.run_name.empty();
  if (!asked) return;
  const bool from_env = mlflow.tracking_uri.empty();
  if (from_env) mlflow.tracking_uri = core::env("MLFLOW_TRACKING_URI").value_or("");
  if (mlflow.tracking_uri.empty())
    throw UsageError("config: logging.mlflow." + std::string(mlflow.experiment.empty() ? "run_name" : "experiment") +
                         " is set, but no tracking server is named: logging.mlflow.tracking_uri is unset and so is MLFLOW_TRACKING_URI",
                     "set logging.mlflow.tracking_uri: http://HOST:5000 (the address `mlflow server` listens on), "
                     "or export MLFLOW_TRACKING_URI");
  const auto& uri = mlflow.tracking_uri;
  const std::string named =
      (from_env ? "MLFLOW_TRACKING_URI (logging.mlflow.tracking_uri is unset)" : "config: logging.mlflow.tracking_uri") +
      std::string(" is '") + data::postgres::mask_password(uri) + "'";
  const std::string set_it = from_env ? "export MLFLOW_TRACKING_URI=" : "set logging.mlflow.tracking_uri: ";
  if (uri.rfind("http://", 0) != 0 && uri.rfind("https://", 0) != 0)
    throw UsageError(
        named + ", which is not an MLflow tracking server's address: gputrain logs over MLflow's REST API, to http:// or https://",
        "start a server (mlflow server --host 127.0.0.1 --port 5000) and " + set_it +
            "http://127.0.0.1:5000; file stores, databricks and database URIs are for MLflow's Python client");
  if (const auto fault = mlflow::url_fault(uri); !fault.empty())
    throw UsageError(named + ", which is not an address to connect to: " + fault, set_it + "http://HOST:PORT, e.g. http://127.0.0.1:5000");
  // The address of a page of MLflow's web UI, copied from the browser: its requests would go to
  // the page's server path with the fragment dropped, and get the UI's HTML back.
  if (const auto fragment = uri.find('#'); fragment != std::string::npos) {
    auto server = uri.substr(0, fragment);
    while (server.size() > 8 && server.back() == '/') server.pop_back();
    const bool experiment_page = uri.find("/experiments/", fragment) != std::string::npos;
    throw UsageError(
        named + ", the address of a page of MLflow's web UI (the part from '#' on is the page's)",
        set_it + server +
            (experiment_page ? ", and logging.mlflow.experiment to the name that page shows (ids are for MLFLOW_EXPERIMENT_ID)" : ""));
  }
  if (mlflow.timeout <= 0)
    throw UsageError("config: logging.mlflow.timeout is none: each request to the server needs a time limit",
                     "set logging.mlflow.timeout: 10s, or longer for a slow link");
  while (mlflow.tracking_uri.size() > 8 && mlflow.tracking_uri.back() == '/') mlflow.tracking_uri.pop_back();
  const bool experiment_from_env = mlflow.experiment.empty();
  if (experiment_from_env) {
    mlflow.experiment = core::env("MLFLOW_EXPERIMENT_NAME").value_or("");
    if (mlflow.experiment.empty() && core::env("MLFLOW_EXPERIMENT_ID").value_or("").empty()) mlflow.experiment = "Default";
  }
  constexpr std::size_t kMaxExperimentName = 500;  // MLflow's own limit, which its server enforces
  if (mlflow.experiment.size() > kMaxExperimentName)
    throw UsageError(std::string(experiment_from_env ? "MLFLOW_EXPERIMENT_NAME" : "config: logging.mlflow.experiment") + " is " +
                         std::to_string(mlflow.experiment.size()) + " bytes long; MLflow takes a name of at most " +
                         std::to_string(kMaxExperimentName),
                     "give the experiment a shorter name");
  (void)tracking_token();  // refused now, not at the first request
  (void)tls_settings();
}

std::string experiment_id_from_env(const MlflowConfig& resolved) {
  const auto id = core::env("MLFLOW_EXPERIMENT_ID").value_or("");
  if (id.empty() || resolved.experiment.empty()) return id;
  return resolved.experiment == core::env("MLFLOW_EXPERIMENT_NAME").value_or("") ? id : "";
}

std::string run_id_from_env() { return core::env("MLFLOW_RUN_ID").value_or(""); }

namespace {

std::string readable_file(const char* variable) {
  const auto path = core::env(variable).value_or("");
  if (path.empty()) return path;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || ::access(path.c_str(), R_OK) != 0)
    throw UsageError(
        std::string(variable) + " is '" + path + "', which is not a file this user can read",
        std::string("point it at the PEM file (-----BEGIN CERTIFICATE-----)") +
            (std::string(variable) == "MLFLOW_TRACKING_SERVER_CERT_PATH" ? " of the authority that signed the server's certificate"
                                                                         : " holding the client certificate and its key") +
            ", or unset it");
  return path;
}

}  // namespace

TlsSettings tls_settings() {
  TlsSettings tls;
  auto insecure = core::env("MLFLOW_TRACKING_INSECURE_TLS").value_or("false");
  std::transform(insecure.begin(), insecure.end(), insecure.begin(), [](unsigned char c) { return std::tolower(c); });
  if (insecure != "true" && insecure != "false" && insecure != "1" && insecure != "0" && !insecure.empty())
    throw UsageError("MLFLOW_TRACKING_INSECURE_TLS is '" + insecure + "', which is neither true nor false",
                     "set it to true (the server's certificate is not checked) or false, or unset it");
  tls.insecure = insecure == "true" || insecure == "1";
  tls.server_cert = readable_file("MLFLOW_TRACKING_SERVER_CERT_PATH");
  tls.client_cert = readable_file("MLFLOW_TRACKING_CLIENT_CERT_PATH");
  if (tls.insecure && !tls.server_cert.empty())
    throw UsageError(
        "MLFLOW_TRACKING_INSECURE_TLS is true and MLFLOW_TRACKING_SERVER_CERT_PATH is set: one says not to check the "
        "server's certificate, the other what to check it against",
        "unset one of them (MLflow's clients refuse the two together too)");
  return tls;
}

std::optional<std::string> tracking_token() {
  auto token = core::env("MLFLOW_TRACKING_TOKEN").value_or("");
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!token.empty() && blank(token.back())) token.pop_back();
  const auto first = std::find_if_not(token.begin(), token.end(), blank);
  token.erase(token.begin(), first);
  if (token.empty()) return std::nullopt;
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c < 0x20 || c == 0x7f)  // a line break inside would end the header and start another
      throw UsageError("MLFLOW_TRACKING_TOKEN holds a control character (byte " + std::to_string(c) + " at position " +
                           std::to_string(i + 1) + " of " + std::to_string(token.size()) + "), which an HTTP header cannot carry",
                       "set MLFLOW_TRACKING_TOKEN to the token alone, on one line");
  }
  return token;
}

}  // namespace gputrain::train
