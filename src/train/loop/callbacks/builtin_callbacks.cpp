#include "builtin_callbacks.hpp"

#include <yaml-cpp/yaml.h>

namespace gputrain::train {

std::optional<double> watched_value(const EpochMetrics& m, const std::string& metric) {
  for (const auto& [name, value] : m.extra)
    if (name == metric) return value;
  if (metric == "val_loss") return m.val_loss;
  if (metric == "val_accuracy") return m.val_accuracy;
  if (metric == "val_balanced_accuracy") return m.val_balanced_accuracy;
  if (metric == "val_mse") return m.val_mse;
  if (metric == "val_mae") return m.val_mae;
  return std::nullopt;
}

void put(CallbackState& state, const std::string& key, const std::optional<double>& value) {
  if (value) state[key] = *value;
}

std::optional<double> get(const CallbackState& state, const std::string& key) {
  const auto found = state.find(key);
  return found == state.end() ? std::nullopt : std::optional<double>(found->second);
}

CallbackState watch_state(const std::optional<double>& reference, std::int64_t epochs_without_improvement) {
  CallbackState state{{"epochs_without_improvement", static_cast<double>(epochs_without_improvement)}};
  put(state, "reference", reference);
  return state;
}

void load_watch_state(const CallbackState& state, std::optional<double>& reference, std::int64_t& epochs_without_improvement) {
  reference = get(state, "reference");
  epochs_without_improvement = static_cast<std::int64_t>(get(state, "epochs_without_improvement").value_or(0));
}

namespace {

void flatten(const YAML::Node& node, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (node.IsMap()) {
    for (const auto& entry : node) flatten(entry.second, prefix + (prefix.empty() ? "" : ".") + entry.first.as<std::string>(), out);
  } else if (node.IsScalar()) {
    out.emplace_back(prefix, node.Scalar());
  } else {  // a list: its YAML text
    YAML::Emitter text;
    text << YAML::Flow << node;
    out.emplace_back(prefix, text.c_str());
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> config_settings(const Config& config) {
  std::vector<std::pair<std::string, std::string>> out;
  flatten(YAML::Load(to_yaml(config)), "", out);
  return out;
}

c10::Device model_device(Model& model) {
  const auto state = model.named_state();
  return state.empty() ? c10::Device(c10::kCPU) : state.front().second.device();
}

std::vector<std::shared_ptr<Callback>> builtin_callbacks(const Config& config) {
  std::vector<std::shared_ptr<Callback>> callbacks;
  const auto add = [&](std::unique_ptr<Callback> callback) {
    if (callback) callbacks.push_back(std::move(callback));
  };
  add(best_checkpoint_callback(config));
  add(early_stop_callback(config));
  add(plateau_callback(config));
  add(periodic_checkpoint_callback(config));
  add(divergence_stop_callback());
  add(data_file_watch_callback());
  add(time_limit_callback(config));
  add(ema_weights_callback(config));
  add(tensorboard_extras_callback(config));  // after best.pt's: at the end it follows best.pt's choice of epoch
  add(system_monitor_callback(config));
  add(run_report_callback());  // after system_monitor's: it reads FitResult::alerts
  add(profiler_trace_callback(config));
  add(mlflow_tracking_callback(config));  // last: at the end it sends report.json, which run_report writes
  return callbacks;
}

}  // namespace gputrain::train
