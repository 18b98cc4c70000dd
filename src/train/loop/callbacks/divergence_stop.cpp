// A run whose loss turned nan/inf changes nothing for the better: it stops before it writes a
// checkpoint of broken weights over good ones. With fp16's GradScaler a non-finite loss is
// harmless as long as some steps still update (the scaler skips the others, and one bad batch is
// one skipped step); when every step for kPatience steps was skipped, nothing is learning any more.
#include <algorithm>
#include <cmath>

#include "builtin_callbacks.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "train/step/step_failures.hpp"

namespace gputrain::train {
namespace {

// Consecutive skipped steps with a non-finite loss that end an fp16 run: a logging window of 8 or
// more (the default's 50) ends it at once; windows of 1 step end it at the 8th.
constexpr std::int64_t kPatience = 8;

class DivergenceStop final : public Callback {
 public:
  std::string name() const override { return "divergence_stop"; }

  void on_log(RunControl& run, const StepMetrics&, const LossWindow& window) override { check(run, window); }

  // A checkpoint between two step lines: the steps since the last line must be sound too.
  void on_before_checkpoint(RunControl& run, const LossWindow* window) override {
    if (window) check(run, *window);
  }

 private:
  void check(const RunControl& run, const LossWindow& window) {
    // A checkpoint's window and the next line's may share steps: each counts once.
    const auto first = std::max(window.first_step, counted_to_ + 1);
    counted_to_ = std::max(counted_to_, window.last_step);
    const bool all_skipped = window.skipped_steps >= window.last_step - window.first_step + 1;
    if (std::isfinite(window.mean_loss) || !all_skipped) skipped_run_ = 0;
    if (std::isfinite(window.mean_loss)) return;
    if (run.loss_scaling()) {
      if (!all_skipped) return;
      skipped_run_ += std::max<std::int64_t>(0, window.last_step - first + 1);
      if (skipped_run_ < kPatience) return;
    }
    Divergence divergence{window.mean_loss, window.first_step, window.last_step, run.loss_scaling(), run.last_checkpoint()};
    // The first step is always reported on its own: a window from step 1 is the run's first loss.
    divergence.at_first_step = window.first_step == 1;
    throw divergence_error(divergence, run.config());  // data with NaN/inf never gets here: open_data refuses it
  }

  std::int64_t counted_to_ = 0;   // the last step counted into skipped_run_
  std::int64_t skipped_run_ = 0;  // skipped steps with a non-finite loss, back to back
};

}  // namespace

std::unique_ptr<Callback> divergence_stop_callback() { return std::make_unique<DivergenceStop>(); }

}  // namespace gputrain::train
