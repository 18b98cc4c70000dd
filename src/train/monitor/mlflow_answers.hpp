#pragma once
// What an MLflow tracking server's answer means, in words a user acts on: a refusal (401, 403, a
// deleted experiment or run), a redirect, or an answer from something that is not MLflow at all (a
// sign-in page in front of it, another web server). Pure functions over what libcurl received, so
// that each wording is tested without a server (mlflow_rest.cpp makes the requests).

#include <string>

#include "mlflow_api.hpp"

namespace gputrain::train::mlflow {

/// An HTTP answer as libcurl received it.
struct Answer {
  long status = 0;
  std::string body;
  std::string location;  ///< where a redirect sends the client, "" when none
};

/// Who asked, for the fixes: the address as the run shows it (a password masked) and the credentials
/// MLflow's variables gave.
struct Asker {
  std::string tracking_uri;
  std::string username;  ///< MLFLOW_TRACKING_USERNAME, "" when unset
  bool token = false;    ///< MLFLOW_TRACKING_TOKEN is set (and wins over a username)
};

/// The error for an answer other than 200 to `doing` ("creating a run"): retried for a 5xx, 408 or
/// 429 (the server may take it later), else the refusal with its fix.
ApiError refusal(const std::string& doing, const Answer& answer, const Asker& asker);

/// The error for a 200 whose body is not MLflow's JSON: a sign-in page or another web server.
ApiError not_mlflow(const std::string& doing, const Answer& answer, const Asker& asker);

/// A deleted experiment keeps its name (MLflow's trash): no run can be made in it or in a new one so named.
ApiError deleted_experiment(const std::string& name, const std::string& id, const Asker& asker);

/// MLFLOW_EXPERIMENT_ID names no experiment the server has (`said`: its words).
ApiError no_experiment_with_id(const std::string& id, const std::string& said, const Asker& asker);

/// MLFLOW_EXPERIMENT_ID is not the id of the experiment MLFLOW_EXPERIMENT_NAME names, as MLflow's
/// clients refuse it.
ApiError experiment_id_mismatch(const std::string& name, const std::string& found_id, const std::string& env_id);

/// A run deleted on the server (its trash): nothing can be logged to it until it is restored. With
/// its experiment's name where the experiment was deleted (which deletes its runs): restoring that
/// brings both back.
ApiError deleted_run(const std::string& run_id, const Asker& asker, const std::string& deleted_experiment_id = "",
                     const std::string& experiment_name = "");

/// An https:// address whose server speaks plain HTTP on that port (`detail`: the TLS library's words).
ApiError speaks_plain_http(const std::string& detail, const Asker& asker);

/// Whether a failed TLS handshake's words are those of a server that answered in plain HTTP
/// (OpenSSL's "wrong version number"); other failures may pass (a reset mid-handshake), so are retried.
bool is_plain_http_handshake(const std::string& detail);

/// An http:// address whose server speaks TLS on that port.
ApiError speaks_tls(const Asker& asker);

}  // namespace gputrain::train::mlflow
