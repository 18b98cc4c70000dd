#include "step_failures.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gputrain/core/units.hpp"

namespace gputrain::train {
namespace {

// A loss already nan/inf at the run's first step came before any update, so neither the learning
// rate nor the optimizer made it; nor did the data, which open_data searched for NaN and inf
// (refuse_nonfinite_samples; decoded images cannot hold them), nor the starting weights (searched
// too: nonfinite_tensor). What is left is the forward pass and the loss.
Error first_step_divergence(const Divergence& d, const Config& config) {
  std::vector<std::string> causes;
  if (config.train.precision == Precision::fp16_mixed) causes.push_back("fp16 overflows where bf16 does not: try bf16-mixed or fp32");
  if (!config.model.torchscript.empty())
    causes.push_back(
        "model.torchscript's forward may make one (a log or division of 0, a sqrt of a negative): run it on a batch in Python");
  std::vector<std::string> unscaled, settings;
  if (!config.data.standardize) unscaled.push_back("inputs"), settings.push_back("data.standardize: true");
  if (config.data.task == "regression" && !config.data.standardize_targets)
    unscaled.push_back("targets"), settings.push_back("data.standardize_targets: true");
  if (!unscaled.empty())
    causes.push_back(core::join(unscaled, " or ") + " far from unit scale may overflow: set " + core::join(settings, " and "));
  return Error("training diverged: the loss is " + std::string(std::isnan(d.mean_loss) ? "nan" : "inf") +
                   " from the first step, before any weight was updated (train.precision " + to_string(config.train.precision) + ")",
               "the training data holds no NaN or inf (searched before the first step), so the forward pass or the loss made it; " +
                   core::join(causes, "; "));
}

}  // namespace

Error divergence_error(const Divergence& d, const Config& config) {
  if (d.at_first_step) return first_step_divergence(d, config);
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", config.optimizer.lr);
  const std::string steps = d.first_step == d.last_step ? "step " + std::to_string(d.last_step)
                                                        : "steps " + std::to_string(d.first_step) + "-" + std::to_string(d.last_step);
  return Error("training diverged: the loss is " + std::string(std::isnan(d.mean_loss) ? "nan" : "inf") + " over " + steps +
                   (d.scaler_skipped_all ? " and the GradScaler skipped all of them" : "") + " (optimizer.lr " + lr + ", train.precision " +
                   to_string(config.train.precision) + ")",
               std::string("lower optimizer.lr, set train.clip_grad_norm (e.g. 1.0) or add scheduler.warmup_steps") +
                   (config.train.precision == Precision::fp16_mixed ? ", or use bf16-mixed (fp16 overflows where bf16 does not)" : "") +
                   (d.last_checkpoint.empty() ? "; no checkpoint was written"
                                              : "; the checkpoints written before are intact: resume from one with "
                                                "checkpoint.resume: PATH (last: " +
                                                    d.last_checkpoint + ")"));
}

std::string remedy_for_step_failure(const std::string& message, std::int64_t train_samples, std::int64_t batch) {
  if (message.find("Expected more than 1 value per channel when training") != std::string::npos)
    return "a batch of one sample reached a BatchNorm layer, which cannot normalise over one value; it happens to "
           "the epoch's last batch when the samples (" +
           std::to_string(train_samples) + ") are not a multiple of the batch (" + std::to_string(batch) +
           "), or when unreadable samples were dropped from a batch: set "
           "data.drop_last: true, or a train.batch_size that divides the number of samples";
  if (message.find("out of memory") != std::string::npos)  // one the OOM guard could not take (outside a step's batch)
    return "lower train.batch_size and raise train.grad_accum, use train.precision: bf16-mixed, or allow more memory "
           "(device.max_memory); `gputrain profile --memory` shows where it goes";
  return "if the config looks right, report it with the run directory's config.yaml and training.log";
}

}  // namespace gputrain::train
