#pragma once
// The callbacks gputrain itself runs, one file each beside this one. The list in
// builtin_callbacks.cpp is the one place a new built-in callback is registered.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/train/callback.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// The figure a callback watches (checkpoint.best_metric) out of an epoch's, when it has one.
std::optional<double> watched_value(const EpochMetrics& metrics, const std::string& metric);

/// Saves a callback's optional number under `key`: absent when unset.
void put(CallbackState& state, const std::string& key, const std::optional<double>& value);
/// Reads what put() saved.
std::optional<double> get(const CallbackState& state, const std::string& key);

/// The state of a watch on a validation figure (early stopping, the plateau schedule): the value
/// to beat and the validations in a row that have not.
CallbackState watch_state(const std::optional<double>& reference, std::int64_t epochs_without_improvement);
/// Reads what watch_state() saved.
void load_watch_state(const CallbackState& state, std::optional<double>& reference, std::int64_t& epochs_without_improvement);

std::unique_ptr<Callback> best_checkpoint_callback(const Config& config);
std::unique_ptr<Callback> early_stop_callback(const Config& config);
std::unique_ptr<Callback> plateau_callback(const Config& config);
std::unique_ptr<Callback> periodic_checkpoint_callback(const Config& config);
std::unique_ptr<Callback> divergence_stop_callback();
std::unique_ptr<Callback> data_file_watch_callback();
std::unique_ptr<Callback> time_limit_callback(const Config& config);
std::unique_ptr<Callback> ema_weights_callback(const Config& config);
std::unique_ptr<Callback> tensorboard_extras_callback(const Config& config);
std::unique_ptr<Callback> system_monitor_callback(const Config& config);
std::unique_ptr<Callback> run_report_callback();
std::unique_ptr<Callback> profiler_trace_callback(const Config& config);
std::unique_ptr<Callback> mlflow_tracking_callback(const Config& config);

/// The built-in callbacks this config turns on, in the order they run: best.pt before early
/// stopping and the plateau schedule (as a resumed run must find them), checkpoints after.
/// Every setting of the resolved config as config.yaml shows it ("optimizer.lr" -> "0.01", a list
/// in flow style), in its order: TensorBoard's hparams, MLflow's params.
std::vector<std::pair<std::string, std::string>> config_settings(const Config& config);

/// The device the model's tensors are on (the first one's; the CPU for a model without any).
c10::Device model_device(Model& model);

std::vector<std::shared_ptr<Callback>> builtin_callbacks(const Config& config);

}  // namespace gputrain::train
