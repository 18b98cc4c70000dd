#pragma once
// logging.mlflow resolved from the environment as MLflow's own clients do (MLFLOW_TRACKING_URI,
// MLFLOW_EXPERIMENT_NAME, MLFLOW_EXPERIMENT_ID, MLFLOW_RUN_ID), and checked: an address gputrain
// can log to, before any training.

#include <optional>
#include <string>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Fills logging.mlflow's tracking_uri and experiment from the environment where the config leaves
/// them out (the experiment stays empty where MLFLOW_EXPERIMENT_ID alone names it), and refuses an
/// address that is not an http(s) server's, an experiment name longer than MLflow takes (UsageError,
/// with the fix), or a token tracking_token() refuses.
void resolve_mlflow_settings(MlflowConfig& mlflow);

/// MLFLOW_EXPERIMENT_ID, as MLflow's clients read it, for a resolved logging.mlflow: the experiment
/// itself where neither the config nor MLFLOW_EXPERIMENT_NAME names one, or the id the experiment
/// MLFLOW_EXPERIMENT_NAME names must have; "" where it is unset or the config names the experiment.
std::string experiment_id_from_env(const MlflowConfig& resolved);

/// MLFLOW_RUN_ID: a run made elsewhere (a pipeline's step, `mlflow run`) for this one to log to, as
/// MLflow's start_run() takes it; "" when unset.
std::string run_id_from_env();

/// MLFLOW_TRACKING_TOKEN as an HTTP header can carry it: without the blanks and line breaks around
/// it (a token read from a file keeps its last line break); nullopt when unset or blank. A line
/// break or other control character inside it is a UsageError that says where, not what.
std::optional<std::string> tracking_token();

/// How an https:// server's certificate is checked, from MLflow's own variables:
/// MLFLOW_TRACKING_SERVER_CERT_PATH (the CA certificate, PEM, that signed it; else the system's),
/// MLFLOW_TRACKING_INSECURE_TLS=true (no check) and MLFLOW_TRACKING_CLIENT_CERT_PATH (a client
/// certificate, PEM, its key in the same file). Refuses, as MLflow does, both of the first two set,
/// a value of INSECURE_TLS other than true or false, and a file that cannot be read (UsageError).
struct TlsSettings {
  bool insecure = false;
  std::string server_cert, client_cert;
};
TlsSettings tls_settings();

}  // namespace gputrain::train
