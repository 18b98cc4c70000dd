// checkpoint.every_steps and checkpoint.every_epochs: step-N.pt files, the newest keep_last kept.
#include "builtin_callbacks.hpp"
#include "gputrain/train/checkpoint.hpp"

namespace gputrain::train {
namespace {

class PeriodicCheckpoint final : public Callback {
 public:
  PeriodicCheckpoint(std::int64_t every_steps, std::int64_t every_epochs) : every_steps_(every_steps), every_epochs_(every_epochs) {}

  std::string name() const override { return "periodic_checkpoint"; }

  void on_step_end(RunControl& run, std::int64_t step) override {
    if (every_steps_ > 0 && step % every_steps_ == 0) run.save_checkpoint();
  }

  void on_epoch_end(RunControl& run, const EpochMetrics&) override {
    if (every_epochs_ > 0 && run.progress().epoch % every_epochs_ == 0) run.save_checkpoint();
  }

 private:
  const std::int64_t every_steps_, every_epochs_;
};

}  // namespace

std::unique_ptr<Callback> periodic_checkpoint_callback(const Config& config) {
  if (config.checkpoint.every_steps <= 0 && config.checkpoint.every_epochs <= 0) return nullptr;
  return std::make_unique<PeriodicCheckpoint>(config.checkpoint.every_steps, config.checkpoint.every_epochs);
}

}  // namespace gputrain::train
