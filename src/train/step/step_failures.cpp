#include "step_failures.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gputrain/core/error_text.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::train {
namespace {

std::string stripped(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// A traceback frame as "model.py:9 in forward: h = h.view(5, -1)": its `File "...", line N, in f`
// line (the nearest above the HERE mark at `mark`, after `from`) and the code line above the mark.
std::string frame_at(const std::vector<std::string>& lines, std::size_t from, std::size_t mark) {
  std::string where = "the module's code";
  for (std::size_t i = mark; i-- > from;) {
    const auto line = stripped(lines[i]);
    const auto quote = line.find('"', 6), number = line.find(", line "), in = line.find(", in ");
    if (line.rfind("File \"", 0) != 0 || quote == std::string::npos || number == std::string::npos || in == std::string::npos) continue;
    where = line.substr(6, quote - 6) + ":" + line.substr(number + 7, in - number - 7) + " in " + line.substr(in + 5);
    break;
  }
  return where + (mark > from ? ": " + stripped(lines[mark - 1]) : "");
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

bool batch_norm_refused_one_sample(const std::string& message) {
  return message.find("Expected more than 1 value per channel when training") != std::string::npos;
}

std::string remedy_for_step_failure(const std::string& message, std::int64_t micro_batch) {
  // An epoch's last pass of one sample is left out before training (setup/lone_sample.hpp): what
  // is left is a pass the run could not plan.
  if (batch_norm_refused_one_sample(message))
    return "a pass of one sample reached a batch-norm layer, which cannot normalise one value: " +
           std::string(micro_batch == 1 ? "the out-of-memory handler had split the step into passes of one; set oom.min_micro_batch: 2"
                                        : "unreadable samples left out of a streamed batch left one; mend or remove the unreadable files "
                                          "named above, or set data.cache: ram (a cache leaves them out before the first step, so every "
                                          "batch is whole)");
  if (message.find("is out of bounds") != std::string::npos && message.rfind("Target ", 0) == 0)  // cross entropy's class check
    return "a class id reached an output with fewer logits than classes: the model must give one per class (data.classes) for "
           "every batch; a model.torchscript whose output's shape follows its batch's (checked before training on batches "
           "of 2 and 3) does this on another batch size";
  if (message.find("does not require grad and does not have a grad_fn") != std::string::npos)  // backward found no graph
    return "the loss does not depend on any weight that trains: a model's forward that ends in .detach(), torch.no_grad() or a new "
           "tensor (torch.zeros) cuts it off; return the layers' output itself";
  if (message.find("out of memory") != std::string::npos)  // one the OOM guard could not take (outside a step's batch)
    return "lower train.batch_size and raise train.grad_accum, use train.precision: bf16-mixed, or allow more memory "
           "(device.max_memory); `gputrain profile --memory` shows where it goes";
  return "if the config looks right, report it with the run directory's config.yaml and training.log";
}

Error module_raised(const std::string& python_class, const std::string& message, const std::string& part, const std::string& torchscript) {
  const std::string type = python_class.empty() ? "an error" : python_class.substr(python_class.rfind('.') + 1);  // RuntimeError
  return Error(part + " failed: model.torchscript (" + torchscript + ") raised " + type + ": " + message,
               "the module's forward raised it: fix the module in Python and script it again "
               "(torch.jit.script(model).save(...)), or leave out the samples it refuses; its traceback is in training.log");
}

std::optional<Error> interpreter_failure(const std::string& what, const std::string& part, const std::string& torchscript, bool logged) {
  if (what.rfind("The following operation failed in the TorchScript interpreter.", 0) != 0) return std::nullopt;
  const auto lines = lines_of(what);
  // The last traceback: the original code's, when the file kept it. Each frame ends on the line
  // marked HERE; the message follows the innermost.
  std::size_t from = 0;
  std::vector<std::size_t> marks;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("Traceback of TorchScript", 0) == 0) from = i, marks.clear();
    if (lines[i].find("<--- HERE") != std::string::npos) marks.push_back(i);
  }
  std::string message;
  for (std::size_t i = marks.empty() ? from + 1 : marks.back() + 1; i < lines.size(); ++i)
    if (!lines[i].empty() && (lines[i][0] != ' ' || !message.empty())) message += (message.empty() ? "" : " ") + stripped(lines[i]);
  // The user's own line: the innermost frame outside PyTorch's modules (nn.Linear's forward says less).
  std::string place;
  for (const auto mark : marks) {
    const auto frame = frame_at(lines, from, mark);
    if (place.empty() || frame.find("/torch/") == std::string::npos) place = frame;
  }
  return Error(part + " failed in model.torchscript (" + torchscript + "): " + (message.empty() ? core::first_line(what) : message) +
                   (place.empty() ? "" : ", at " + place),
               std::string("the module's forward failed on that batch: fix it in Python and script it again "
                           "(torch.jit.script(model).save(...))") +
                   (logged ? "; the interpreter's traceback is in training.log" : ""));
}

}  // namespace gputrain::train
