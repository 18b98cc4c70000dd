#pragma once
// What a run says when its training stops for a reason inside the steps: a loss that diverged, or
// an error LibTorch raised. Private to the train area; the trainer throws these.

#include <cstdint>
#include <optional>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Where a run stood when its loss turned nan/inf: the steps of the report window it was seen in.
struct Divergence {
  double mean_loss = 0;  ///< nan or inf
  std::int64_t first_step = 0, last_step = 0;
  bool scaler_skipped_all = false;  ///< fp16: the GradScaler skipped every step of the window
  std::string last_checkpoint;      ///< empty when none was written yet
  bool at_first_step = false;       ///< the run's very first loss was already nan/inf: before any update
};

/// The error that stops a diverged run (exit 1): the steps, lr, precision and what to change.
Error divergence_error(const Divergence& divergence, const Config& config);

/// Whether LibTorch's `message` is batch norm's refusal of a one-sample pass in training
/// ("Expected more than 1 value per channel when training").
bool batch_norm_refused_one_sample(const std::string& message);

/// The fix to print with an error LibTorch raised in a training step: specific where the cause is
/// known (a pass of one sample reaching BatchNorm, with `micro_batch` the pass size the step ran
/// at; an out-of-memory error the guard could not take), else where to report it.
std::string remedy_for_step_failure(const std::string& message, std::int64_t micro_batch);

/// The error for a TorchScript module's own `raise` (torch::jit::JITException's Python class, e.g.
/// "builtins.ValueError", and message), after what it ended (`part`: "step 5").
Error module_raised(const std::string& python_class, const std::string& message, const std::string& part, const std::string& torchscript);

/// The error for a TorchScript module whose forward failed in an operation (`what`: the
/// interpreter's "The following operation failed ..." with its two tracebacks): the operation's
/// message and the line of the module's code, after what failed (`part`: "step 5", "the
/// evaluation"); `logged`: the tracebacks went to training.log. Empty for any other error.
std::optional<Error> interpreter_failure(const std::string& what, const std::string& part, const std::string& torchscript, bool logged);

}  // namespace gputrain::train
