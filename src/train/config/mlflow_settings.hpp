#pragma once
// logging.mlflow resolved from the environment as MLflow's own clients do (MLFLOW_TRACKING_URI,
// MLFLOW_EXPERIMENT_NAME), and checked: an address gputrain can log to, before any training.

#include <optional>
#include <string>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Fills logging.mlflow's tracking_uri and experiment from the environment where the config leaves
/// them out, and refuses an address that is not an http(s) server's (UsageError, with the fix), or
/// a token tracking_token() refuses.
void resolve_mlflow_settings(MlflowConfig& mlflow);

/// MLFLOW_TRACKING_TOKEN as an HTTP header can carry it: without the blanks and line breaks around
/// it (a token read from a file keeps its last line break); nullopt when unset or blank. A line
/// break or other control character inside it is a UsageError that says where, not what.
std::optional<std::string> tracking_token();

}  // namespace gputrain::train
