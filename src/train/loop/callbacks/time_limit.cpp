// train.max_time: the run ends, as a finished one does (a checkpoint, model.safetensors), once it
// has trained that long, the time of the runs before a resume included (their checkpoints keep it).
#include <cmath>

#include "builtin_callbacks.hpp"
#include "gputrain/core/duration.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/checkpoint.hpp"

namespace gputrain::train {
namespace {

class TimeLimit final : public Callback {
 public:
  explicit TimeLimit(double max_time) : max_time_(max_time) {}

  std::string name() const override { return "time_limit"; }

  void on_fit_start(RunControl& run) override {
    const double before = run.progress().trained_seconds;  // what the runs before this one trained (their checkpoint says)
    const bool finished = run.progress().step > 0 && run.progress().step >= run.total_steps();
    const bool said = finished || run.stop_requested();  // another reason not to train is said already
    if (before >= max_time_) {
      if (!said)
        run.note("nothing left to train: this run has trained for " + core::duration_text(std::round(before)) + ", its train.max_time of " +
                 core::duration_text(max_time_) + "; to train on, raise train.max_time (none: no limit)");
      run.request_stop(StopReason::time_limit, "train.max_time");
    } else if (before > 0 && !said) {
      run.note("train.max_time " + core::duration_text(max_time_) + ": " + core::duration_text(std::round(before)) +
               " of it used before this resume, " + core::duration_text(std::round(max_time_ - before)) + " left");
    }
  }

  void on_step_end(RunControl& run, std::int64_t) override {
    if (run.trained_seconds() >= max_time_ && !run.stop_requested()) run.request_stop(StopReason::time_limit, "train.max_time");
  }

 private:
  const double max_time_;
};

}  // namespace

std::unique_ptr<Callback> time_limit_callback(const Config& config) {
  if (config.train.max_time <= 0) return nullptr;
  return std::make_unique<TimeLimit>(config.train.max_time);
}

}  // namespace gputrain::train
