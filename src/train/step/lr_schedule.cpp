#include "gputrain/train/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace gputrain::train {
namespace {

constexpr double kPi = 3.14159265358979323846;

double cosine_anneal(double start, double end, double fraction) { return end + (start - end) / 2.0 * (std::cos(kPi * fraction) + 1.0); }

// torch.optim.lr_scheduler.OneCycleLR (three_phase=False, anneal_strategy="cos",
// div_factor=25, final_div_factor=1e4), step for step.
double one_cycle(const SchedulerConfig& c, double max_lr, std::int64_t step, std::int64_t total) {
  const double initial = max_lr / 25.0, final_lr = initial / 1e4;
  const double rise_end = c.pct_start * static_cast<double>(total) - 1.0;
  const double fall_end = static_cast<double>(total) - 1.0;
  const double s = static_cast<double>(step);
  if (s <= rise_end) return cosine_anneal(initial, max_lr, rise_end > 0 ? s / rise_end : 1.0);
  return cosine_anneal(max_lr, final_lr, fall_end > rise_end ? (s - rise_end) / (fall_end - rise_end) : 1.0);
}

}  // namespace

double learning_rate_at(const SchedulerConfig& c, double base_lr, std::int64_t step, std::int64_t total_steps, double plateau_scale) {
  if (c.name == "onecycle") return one_cycle(c, base_lr, step, std::max<std::int64_t>(total_steps, 1));
  // The floor applies to the decays only: neither warm-up nor a min_lr above lr raises the rate.
  if (c.name == "plateau") base_lr = std::max(base_lr * plateau_scale, std::min(base_lr, c.min_lr));
  if (step < c.warmup_steps) return base_lr * static_cast<double>(step + 1) / static_cast<double>(c.warmup_steps);
  const std::int64_t since = step - c.warmup_steps;
  if (c.name == "step") return base_lr * std::pow(c.gamma, static_cast<double>(since / c.step_size));
  if (c.name == "cosine") {
    const std::int64_t span = std::max<std::int64_t>(1, total_steps - c.warmup_steps - 1);
    return cosine_anneal(base_lr, c.min_lr, std::min(1.0, static_cast<double>(since) / static_cast<double>(span)));
  }
  return base_lr;
}

std::vector<std::string> schedule_notes(const OptimizerConfig& optimizer, const SchedulerConfig& scheduler, std::int64_t total_steps) {
  std::vector<std::string> notes;
  const bool some_rate = optimizer.lr > 0 || std::any_of(optimizer.param_groups.begin(), optimizer.param_groups.end(),
                                                         [](const ParamGroupConfig& g) { return g.lr && *g.lr > 0; });
  if (!some_rate) notes.push_back("warning: optimizer.lr is 0: no step changes a weight (batch-norm statistics still move)");
  const auto steps = std::to_string(total_steps);
  if (scheduler.name != "onecycle" && scheduler.warmup_steps >= total_steps && scheduler.warmup_steps > 1)
    notes.push_back("note: scheduler.warmup_steps " + std::to_string(scheduler.warmup_steps) + " is as long as the run's " + steps +
                    " steps or longer: the learning rate rises all run and never reaches optimizer.lr");
  else if (scheduler.name == "step" && scheduler.warmup_steps + scheduler.step_size >= total_steps)
    notes.push_back("note: scheduler.step_size " + std::to_string(scheduler.step_size) +
                    (scheduler.warmup_steps > 0 ? " (after " + std::to_string(scheduler.warmup_steps) + " warm-up steps)" : "") +
                    " is past the run's " + steps + " steps: the learning rate never decays; lower scheduler.step_size");
  return notes;
}

}  // namespace gputrain::train
