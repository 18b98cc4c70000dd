#pragma once
// logging.mlflow resolved from the environment as MLflow's own clients do (MLFLOW_TRACKING_URI,
// MLFLOW_EXPERIMENT_NAME), and checked: an address gputrain can log to, before any training.

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Fills logging.mlflow's tracking_uri and experiment from the environment where the config leaves
/// them out, and refuses an address that is not an http(s) server's (UsageError, with the fix).
void resolve_mlflow_settings(MlflowConfig& mlflow);

}  // namespace gputrain::train
