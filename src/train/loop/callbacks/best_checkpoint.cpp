// best.pt: after each validation, the weights whose checkpoint.best_metric beats every earlier
// epoch's are saved. A run that stopped early ends on them, not on the `patience` epochs that did
// no better (the run's last checkpoint, written before, keeps the state it stopped in).
#include <filesystem>

#include "builtin_callbacks.hpp"
#include "early_stop.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/trainer.hpp"

namespace gputrain::train {
namespace {

class BestCheckpoint final : public Callback {
 public:
  explicit BestCheckpoint(const Config& config) : metric_(config.checkpoint.best_metric), maximize_(maximizes(config.checkpoint)) {}

  std::string name() const override { return "best_checkpoint"; }

  void on_validation_end(RunControl& run, const EpochMetrics& metrics) override {
    const auto value = watched_value(metrics, metric_);
    if (!value || (best_ && !improves(*value, *best_, maximize_))) return;
    best_ = *value;
    best_epoch_ = run.progress().epoch;
    run.save_best();  // every rank: a sharded optimizer state is gathered from all
    if (!run.writer()) return;
    run.note("best " + metric_ + " so far: " + metric_text(metric_, *value) + " -> " + run.best_path());
  }

  void on_fit_end(RunControl& run, FitResult& result) override {
    if (result.early_stop_reason.empty() || result.interrupted || !run.writer()) return;
    const auto best = run.best_path();
    const std::string stopped = "early stopping: " + result.early_stop_reason + "; ";
    if (!std::filesystem::exists(best) || best_epoch_ == 0) {  // best.pt deleted by hand, or written before epochs were recorded
      run.note(stopped + best + " is missing, so model.safetensors holds the last epoch's weights");
      return;
    }
    try {
      run.load_weights(best);
    } catch (const CheckpointDamaged& e) {  // refused before any weight was loaded: the model holds the last epoch's
      run.note(stopped + e.what() + ", so model.safetensors holds the last epoch's weights");
      return;
    }
    result.weights_epoch = best_epoch_;
    result.weights_metric = best_;
    run.record(stopped + "model.safetensors holds epoch " + std::to_string(best_epoch_) + "'s weights (" + metric_ + " " +
               metric_text(metric_, best_.value_or(0.0)) + ", from " + best + ")");
  }

  CallbackState state_dict() const override {
    CallbackState state{{"best_epoch", static_cast<double>(best_epoch_)}};
    put(state, "best", best_);
    return state;
  }

  void load_state_dict(const CallbackState& state) override {
    best_ = get(state, "best");
    best_epoch_ = static_cast<std::int64_t>(get(state, "best_epoch").value_or(0));
  }

 private:
  const std::string metric_;
  const bool maximize_;
  std::optional<double> best_;   // the best value so far
  std::int64_t best_epoch_ = 0;  // the epoch (1-based) it is from; 0: unknown or none
};

}  // namespace

std::unique_ptr<Callback> best_checkpoint_callback(const Config& config) {
  if (config.checkpoint.best_metric == "none") return nullptr;
  return std::make_unique<BestCheckpoint>(config);
}

}  // namespace gputrain::train
