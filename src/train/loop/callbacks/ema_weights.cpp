// train.ema_decay: an exponential moving average of the weights (timm's ModelEmaV2, Lightning's
// EMA callback). After every train.ema_every optimizer steps, on the device and with no host sync:
//   ema = ema_decay * ema + (1 - ema_decay) * weights
// over every floating tensor of the state_dict, batch-norm statistics included; integer buffers
// (num_batches_tracked) are copied. Each validation runs again with the average in the model's
// place (val_loss_ema, val_accuracy_ema, ...: checkpoint.best_metric may name them); checkpoints
// hold it (callback_tensors "ema"), and a finished run writes it as model_ema.safetensors.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>
#include <cstdio>

#include "builtin_callbacks.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/trainer.hpp"

namespace gputrain::train {
namespace {

// A decay whose horizon is longer than the run leaves the average mostly the starting weights
// (0.999 over a 24-step run: 98 % of it), which the *_ema figures then measure, silently.
std::string ema_reach_note(double decay, std::int64_t every, std::int64_t steps) {
  const auto updates = steps / every;
  if (updates == 0)
    return "note: train.ema_every " + std::to_string(every) + " is more than the run's " + std::to_string(steps) +
           " steps: the moving average is never updated, so the *_ema figures and model_ema.safetensors are the starting weights'; "
           "lower train.ema_every";
  const double start_share = std::pow(decay, static_cast<double>(updates));
  if (start_share < 0.5) return "";
  char text[160];
  std::snprintf(text, sizeof text, "%.0f %% of the average at the end; lower train.ema_decay, e.g. %.3g (1 %% at the end)",
                100 * start_share, std::pow(0.01, 1.0 / static_cast<double>(updates)));
  return "note: train.ema_decay " + c10::str(decay) + " over the run's " + std::to_string(updates) + " updates of the average leaves " +
         "the starting weights " + text + ": the *_ema figures and model_ema.safetensors stay close to the starting weights";
}

class EmaWeights final : public Callback {
 public:
  EmaWeights(double decay, std::int64_t every) : decay_(decay), every_(every) {}

  std::string name() const override { return "ema"; }

  // The average starts from the weights the run starts from (initialised, loaded, or resumed),
  // or from the checkpoint's average on a resume.
  void on_fit_start(RunControl& run) override {
    const auto live = run.model().named_state();
    if (!loaded_.empty()) check_fits(live);
    at::NoGradGuard no_grad;
    ema_.clear();
    averaged_.clear();
    averaged_live_.clear();
    copied_.clear();
    for (std::size_t i = 0; i < live.size(); ++i) {
      const auto& [name, tensor] = live[i];
      auto copy = at::empty_like(tensor.detach(), at::MemoryFormat::Preserve).copy_(loaded_.empty() ? tensor.detach() : loaded_[i].second);
      ema_.emplace_back(name, copy);
      if (tensor.is_floating_point()) {
        averaged_.push_back(copy);
        averaged_live_.push_back(tensor.detach());
      } else {
        copied_.emplace_back(copy, tensor.detach());
      }
    }
    if (loaded_.empty() && run.progress().step == 0)
      if (const auto note = ema_reach_note(decay_, every_, run.total_steps()); !note.empty()) run.note(note);
    loaded_.clear();
  }

  void on_step_end(RunControl&, std::int64_t step) override {
    if (step % every_ != 0) return;
    at::NoGradGuard no_grad;
    at::_foreach_lerp_(averaged_, averaged_live_, 1.0 - decay_);
    for (auto& [ema, live] : copied_) ema.copy_(live);
  }

  void on_validation(RunControl& run, EpochMetrics& metrics) override {
    if (metrics.val_samples == 0) return;
    const auto ema = run.validate_with(ema_);
    const auto add = [&](const char* name, const std::optional<double>& value) {
      if (value) metrics.extra.emplace_back(std::string(name) + "_ema", *value);
    };
    add("val_loss", ema.val_loss);
    add("val_accuracy", ema.val_accuracy);
    add("val_balanced_accuracy", ema.val_balanced_accuracy);
    add("val_mse", ema.val_mse);
    add("val_mae", ema.val_mae);
  }

  // model_ema.safetensors beside model.safetensors. A run that ends on best.pt's epoch (an early
  // stop) ends on that epoch's average too.
  void on_fit_end(RunControl& run, FitResult& result) override {
    if (result.interrupted || !run.writer()) return;
    if (result.weights_epoch > 0) {
      auto best = checkpoint_progress(run.best_path()).callback_tensors["ema"];
      if (best.size() == ema_.size()) {
        at::NoGradGuard no_grad;
        for (std::size_t i = 0; i < ema_.size(); ++i) ema_[i].second.copy_(best[i].second);
      }
    }
    const auto path = run.save_weights("model_ema.safetensors", ema_);
    run.record("EMA weights (train.ema_decay " + c10::str(decay_) + "): " + path);
  }

  NamedTensors tensor_state() const override { return ema_; }
  void load_tensor_state(const NamedTensors& tensors) override { loaded_ = tensors; }

 private:
  void check_fits(const NamedTensors& live) const {
    const auto refuse = [](const std::string& why) {
      throw UsageError("the checkpoint's moving average of the weights (train.ema_decay) does not fit the model: " + why,
                       "resume with the model the checkpoint was written with (its config.yaml), or set checkpoint.resume: never");
    };
    if (loaded_.size() != live.size())
      refuse("it has " + std::to_string(loaded_.size()) + " tensors, the model " + std::to_string(live.size()));
    for (std::size_t i = 0; i < live.size(); ++i)
      if (loaded_[i].first != live[i].first || loaded_[i].second.sizes() != live[i].second.sizes())
        refuse(loaded_[i].first + " " + c10::str(loaded_[i].second.sizes()) + " where the model has " + live[i].first + " " +
               c10::str(live[i].second.sizes()));
  }

  const double decay_;
  const std::int64_t every_;
  NamedTensors ema_;                                       // the average, by state_dict name, on the model's device
  NamedTensors loaded_;                                    // a resumed checkpoint's average, until on_fit_start takes it
  std::vector<at::Tensor> averaged_, averaged_live_;       // the floating tensors: average and weights
  std::vector<std::pair<at::Tensor, at::Tensor>> copied_;  // the others (counts): average and weights
};

}  // namespace

std::unique_ptr<Callback> ema_weights_callback(const Config& config) {
  if (config.train.ema_decay <= 0) return nullptr;
  return std::make_unique<EmaWeights>(config.train.ema_decay, config.train.ema_every);
}

}  // namespace gputrain::train
