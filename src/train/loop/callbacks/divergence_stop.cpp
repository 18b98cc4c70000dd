// A run whose loss turned nan/inf changes nothing for the better: it stops before it writes a
// checkpoint of broken weights over good ones. With fp16's GradScaler a non-finite loss is
// harmless as long as some steps still update (the scaler skips the others); when every step of
// the window was skipped, nothing is learning any more either.
#include <cmath>

#include "builtin_callbacks.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "train/step/step_failures.hpp"

namespace gputrain::train {
namespace {

class DivergenceStop final : public Callback {
 public:
  std::string name() const override { return "divergence_stop"; }

  void on_log(RunControl& run, const StepMetrics&, const LossWindow& window) override { check(run, window); }

  // A checkpoint between two step lines: the steps since the last line must be sound too.
  void on_before_checkpoint(RunControl& run, const LossWindow* window) override {
    if (window) check(run, *window);
  }

 private:
  static void check(const RunControl& run, const LossWindow& window) {
    if (std::isfinite(window.mean_loss)) return;
    const bool all_skipped = window.skipped_steps >= window.last_step - window.first_step + 1;
    if (run.loss_scaling() && !all_skipped) return;
    Divergence divergence{window.mean_loss, window.first_step, window.last_step, run.loss_scaling(), run.last_checkpoint()};
    // The first step is always reported on its own: a window from step 1 is the run's first loss.
    divergence.at_first_step = window.first_step == 1;
    throw divergence_error(divergence, run.config());  // data with NaN/inf never gets here: open_data refuses it
  }
};

}  // namespace

std::unique_ptr<Callback> divergence_stop_callback() { return std::make_unique<DivergenceStop>(); }

}  // namespace gputrain::train
