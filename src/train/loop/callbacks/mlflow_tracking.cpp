// logging.mlflow: the run in an MLflow tracking server. Rank 0 sends the resolved config as params,
// what the run is on as tags, every step line, epoch and system reading as metrics (the names
// TensorBoard shows), and at the end config.yaml, report.json and model.safetensors as artifacts
// (a failed run: the first two, marked FAILED).
// The sending happens on the tracker's thread (train/monitor/mlflow_tracker.hpp); the run's id is
// kept in checkpoints, so a resumed run goes on in the same MLflow run.
#include <cmath>
#include <filesystem>

#include "builtin_callbacks.hpp"
#include "data/postgres/dsn.hpp"
#include "gputrain/core/build_info.hpp"
#include "gputrain/device/gpu_info.hpp"
#include "gputrain/train/trainer.hpp"
#include "train/config/mlflow_settings.hpp"
#include "train/monitor/mlflow_tracker.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

// A checkpoint keeps numbers only: the id's bytes, six to a number (exact in a double).
constexpr std::size_t kBytesPerNumber = 6;
constexpr double kMaxRunIdLength = 256;  // MLflow's are 32 hex digits

CallbackState encode_run_id(const std::string& id) {
  CallbackState state{{"run_id_length", static_cast<double>(id.size())}};
  for (std::size_t at = 0; at < id.size(); at += kBytesPerNumber) {
    double number = 0;
    for (std::size_t i = at; i < std::min(id.size(), at + kBytesPerNumber); ++i) number = number * 256 + static_cast<unsigned char>(id[i]);
    state["run_id_" + std::to_string(at / kBytesPerNumber)] = number;
  }
  return state;
}

std::string decode_run_id(const CallbackState& state) {
  const double stored = get(state, "run_id_length").value_or(0);
  if (!(stored > 0 && stored <= kMaxRunIdLength)) return "";  // none, or a damaged checkpoint's: a new run
  const auto length = static_cast<std::size_t>(stored);
  std::string id;
  for (std::size_t at = 0; at < length; at += kBytesPerNumber) {
    auto number = static_cast<std::uint64_t>(get(state, "run_id_" + std::to_string(at / kBytesPerNumber)).value_or(0));
    const std::size_t count = std::min(length - at, kBytesPerNumber);
    std::string part(count, '\0');
    for (std::size_t i = count; i-- > 0; number >>= 8) part[i] = static_cast<char>(number & 0xff);
    id += part;
  }
  return id;
}

class MlflowTracking final : public Callback {
 public:
  explicit MlflowTracking(const Config& config)
      : settings_(config.logging.mlflow), api_(mlflow::make_rest_api({settings_.tracking_uri, settings_.timeout})) {}

  std::string name() const override { return "mlflow"; }

  void on_fit_start(RunControl& run) override {
    if (!run.writer() || tracker_ || !api_) return;
    mlflow::TrackerPlan plan;
    plan.tracking_uri = data::postgres::mask_password(settings_.tracking_uri);
    plan.experiment = settings_.experiment;
    plan.run_name = settings_.run_name.empty() ? fs::path(run.config().logging.dir).filename().string() : settings_.run_name;
    plan.experiment_id = experiment_id_from_env(settings_);
    plan.resume_run_id = resume_run_id_;
    plan.given_run_id = run_id_from_env();
    plan.params = config_settings(run.config());
    plan.tags = tags(run);
    tracker_ = std::make_unique<mlflow::Tracker>(std::move(api_), std::move(plan));
    tracker_->failed_wait_seconds = settings_.timeout;
    tracker_->wait_for_run();  // the first checkpoint keeps the run's id
    say(run);
  }

  void on_step_end(RunControl& run, std::int64_t) override { say(run); }
  void on_log(RunControl&, const StepMetrics& m, const LossWindow&) override { send(scalars_of(m), m.step); }
  void on_validation_end(RunControl&, const EpochMetrics& m) override { send(scalars_of(m), m.step); }
  void on_record(RunControl&, const MetricRecord& r) override { send(scalars_of(r), r.step); }

  void on_fit_end(RunControl&, FitResult& result) override { status_ = result.interrupted ? "KILLED" : "FINISHED"; }

  void on_fit_closed(RunControl& run, const FitResult& result) override {
    if (!tracker_) return;
    auto files = run_files(run);
    if (!result.weights_path.empty()) files.push_back(result.weights_path);
    tracker_->finish(status_, files, settings_.timeout);
    say(run);
  }

  // A failed run goes to the server too, marked FAILED, with its metrics so far and the report
  // that says what ended it (run_report, before this callback, has written it).
  void on_fit_failed(RunControl& run, const FitResult&) override {
    if (!tracker_) return;
    tracker_->finish("FAILED", run_files(run), settings_.timeout);
    say(run);
  }

  CallbackState state_dict() const override {
    // A run whose server never answered keeps the id it resumed with, for the next resume.
    const auto id = tracker_ && !tracker_->run_id().empty() ? tracker_->run_id() : resume_run_id_;
    return id.empty() ? CallbackState{} : encode_run_id(id);
  }
  void load_state_dict(const CallbackState& state) override { resume_run_id_ = decode_run_id(state); }

 private:
  static std::vector<std::string> run_files(RunControl& run) {
    std::vector<std::string> files;
    const fs::path dir(run.config().logging.dir);
    for (const auto& file : {dir / "config.yaml", dir / "report.json"})
      if (fs::exists(file)) files.push_back(file.string());
    return files;
  }

  static std::vector<mlflow::Entry> tags(RunControl& run) {
    const auto device = model_device(run.model());
    std::string gpu;
    if (device.is_cuda())
      for (const auto& found : device::discover_gpus().gpus)
        if (found.index == device.index()) gpu = found.name;
    std::vector<mlflow::Entry> out{{"gputrain.version", std::string(core::build_info().gputrain_version)},
                                   {"gputrain.device", device.str()},
                                   {"gputrain.world_size", std::to_string(run.world_size())},
                                   {"gputrain.run_dir", run.config().logging.dir},
                                   {"mlflow.source.name", "gputrain train"}};
    if (!gpu.empty()) out.emplace_back("gputrain.gpu", gpu);
    return out;
  }

  void send(const Scalars& scalars, std::int64_t step) {
    if (!tracker_) return;
    std::vector<mlflow::Metric> metrics;
    const auto at = mlflow::now_ms();
    for (const auto& [key, value] : scalars)
      if (std::isfinite(value)) metrics.push_back({key, value, at, step});  // JSON has no NaN: metrics.jsonl keeps it
    tracker_->log(std::move(metrics));
  }

  void say(RunControl& run) {
    if (!tracker_) return;
    for (const auto& message : tracker_->take_messages()) {
      if (message.level == mlflow::Level::warning) run.warn(message.text);
      if (message.level == mlflow::Level::note) run.note(message.text);
      if (message.level == mlflow::Level::record) run.record(message.text);
    }
  }

  MlflowConfig settings_;
  std::unique_ptr<mlflow::Api> api_;
  std::unique_ptr<mlflow::Tracker> tracker_;
  std::string resume_run_id_, status_ = "FINISHED";
};

}  // namespace

std::unique_ptr<Callback> mlflow_tracking_callback(const Config& config) {
  if (config.logging.mlflow.tracking_uri.empty()) return nullptr;
  return std::make_unique<MlflowTracking>(config);
}

}  // namespace gputrain::train
