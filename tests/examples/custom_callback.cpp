// Example (compiled and run by the tests, shown in docs/architecture.md): a C++ user adds a
// callback to the training loop. This one stops the run once the validation accuracy reaches a
// target, and keeps the best accuracy it has seen in its state_dict, so a resumed run knows it:
// checkpoints save it under the callback's name.
#include <filesystem>
#include <iostream>
#include <memory>

#include "gputrain/train/callback.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"

using namespace gputrain::train;

class StopAtAccuracy : public Callback {
 public:
  explicit StopAtAccuracy(double target) : target_(target) {}
  std::string name() const override { return "stop_at_accuracy"; }

  void on_validation_end(RunControl& run, const EpochMetrics& metrics) override {
    if (!metrics.val_accuracy) return;
    best_ = std::max(best_, *metrics.val_accuracy);
    if (*metrics.val_accuracy >= target_) {
      run.note("stop_at_accuracy: " + std::to_string(*metrics.val_accuracy) + " reached the target");
      run.request_stop(StopReason::request, "val_accuracy reached " + std::to_string(target_));
    }
  }

  CallbackState state_dict() const override { return {{"best", best_}}; }
  void load_state_dict(const CallbackState& state) override {
    if (const auto best = state.find("best"); best != state.end()) best_ = best->second;
  }
  double best() const { return best_; }

 private:
  double target_, best_ = 0;
};

int main() {
  const auto run_dir = std::filesystem::temp_directory_path() / "gputrain-custom-callback";
  std::filesystem::remove_all(run_dir);
  const Config config = load_config(
      {{},
       {"model.name=mlp", "data.shape=[20]", "data.classes=4", "data.samples=512", "train.epochs=50", "train.batch_size=32",
        "optimizer.lr=0.01", "device=cpu", "checkpoint.every_epochs=1", "logging.progress=lines", "logging.dir=" + run_dir.string()},
       ""});
  auto stop = std::make_shared<StopAtAccuracy>(0.6);
  TrainerOptions options;
  options.callbacks.push_back(stop);  // the one registration line
  const FitResult result = Trainer(config, options).fit();
  const bool stopped = result.epochs_done < 50 && stop->best() >= 0.6;
  std::cout << "stop_at_accuracy: stopped after epoch " << result.epochs_done << ", best " << stop->best() << "\n";

  // A resumed run restores the callback's state from the checkpoint before its first step.
  auto resumed = std::make_shared<StopAtAccuracy>(0.99);
  TrainerOptions again;
  again.callbacks.push_back(resumed);
  Config longer = config;
  longer.train.epochs = result.epochs_done + 1;
  Trainer(longer, again).fit();
  const bool restored = resumed->best() >= stop->best();
  std::cout << "resumed: best " << resumed->best() << (restored ? " (restored)" : " (lost)") << "\n";
  return stopped && restored && std::filesystem::exists(result.weights_path) ? 0 : 1;
}
