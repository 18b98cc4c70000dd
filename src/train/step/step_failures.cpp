#include "step_failures.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>

namespace gputrain::train {

Error divergence_error(const Divergence& d, const Config& config) {
  // No update has happened before the first loss, so neither the learning rate nor the optimizer
  // can be the cause: the inputs or labels are, or an fp16 forward pass overflowed.
  if (d.at_first_step)
    return Error(
        "training diverged: the loss is " + std::string(std::isnan(d.mean_loss) ? "nan" : "inf") +
            " from the first step, before any weight was updated (train.precision " + to_string(config.train.precision) + ")",
        std::string("check the training data for NaN or inf values (inputs and labels; a missing value saved as NaN is "
                    "the usual one)") +
            (config.train.precision == Precision::fp16_mixed ? "; fp16 may overflow in the forward pass: try bf16-mixed or fp32" : "") +
            (config.model.init_weights.empty() ? "" : "; or model.init_weights holds NaN/inf"));
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
