// train::check_scripted_model (declared in run_setup.hpp).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/run_setup.hpp"
#include "train/models/weight_matching.hpp"
#include "train/step/training_step.hpp"

namespace gputrain::train {
namespace {

// The line that says what went wrong, without TorchScript's traceback above it.
std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of(" \n");
  if (end == std::string::npos) return text;
  const auto newline = text.rfind('\n', end);
  const auto start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, end - start + 1);
}

// What its parameters must be for training here: all float32 (train.precision decides the
// compute type; the weights and the optimizer's state stay float32), finite, and some that train.
void check_parameters(Model& model, const std::string& file, bool training) {
  const auto parameters = model.parameters();
  std::int64_t trainable = 0;
  for (const auto& p : parameters) {
    if (p.scalar_type() != at::kFloat)
      throw UsageError("model.torchscript '" + file + "' has " + std::string(c10::toString(p.scalar_type())) +
                           " parameters; gputrain trains float32 weights (train.precision sets the compute type, e.g. bf16-mixed)",
                       "call model.float() before scripting it and save it again");
    trainable += p.requires_grad() ? 1 : 0;
  }
  if (const auto found = nonfinite_tensor(model.named_state()))
    throw UsageError("model.torchscript '" + file + "': " + *found + ", which no training step repairs",
                     "save the module with weights from before the run that trained it diverged");
  if (training && trainable == 0)
    throw UsageError("model.torchscript '" + file + "' has no parameter that trains (" +
                         core::counted(static_cast<std::int64_t>(parameters.size()), "parameter") +
                         (parameters.empty() ? "" : ", none with requires_grad") + ")",
                     parameters.empty() ? "script a model with layers that learn (nn.Linear, nn.Conv2d, ...)"
                                        : "leave requires_grad on for the parameters to train before scripting (train.freeze "
                                          "freezes by name here)");
}

}  // namespace

void check_scripted_model(const Config& config, const RunData& data, c10::Device device, bool training) {
  if (config.model.torchscript.empty()) return;
  const auto& file = config.model.torchscript;
  auto model = build_model(ModelSpec{config.model, config.data.shape, model_outputs(config)});
  check_parameters(*model, file, training);
  model->to(device);
  const bool channels_last = config.uses_channels_last();
  if (channels_last) use_channels_last(*model);
  model->set_training(false);
  const std::string sample = c10::str(c10::IntArrayRef(config.data.shape)) + " (" + data.sources.train->description() + ")";
  const auto refuse = [&](const std::string& why) {
    return UsageError("model.torchscript '" + file + "' cannot take this data's samples, shaped " + sample + ": " + last_line(why),
                      "script a model whose input is a batch of such samples ([batch, ...sample shape]), or pick the "
                      "data's columns or arrays with data.features");
  };
  const auto forward = [&](const at::Tensor& inputs) {
    try {
      const at::AutoGradMode grad(training);  // to see below that the output reaches the weights
      return model->forward(model_input(data.transform, channels_last, inputs, /*training=*/false));
    } catch (const c10::Error& e) {
      throw refuse(e.what_without_backtrace());
    } catch (const Error&) {  // the model's own finding (an output that is no tensor): already in the user's terms
      throw;
    } catch (const std::runtime_error& e) {  // the TorchScript interpreter's own errors (torch::jit::JITException)
      throw refuse(e.what());
    }
  };
  const bool classification = config.data.task == "classification";
  const std::int64_t wanted = model_outputs(config);
  std::string even;                          // what a batch of 2 gave, when a batch of 3 gives another shape
  for (const std::int64_t batch : {2, 3}) {  // an even and an odd batch: an output that follows the batch's size shows
    const auto samples = probe_samples(data, device, batch);
    const std::int64_t n = samples.size();
    if (n < batch && batch > 2) break;
    const auto output = forward(samples.inputs);
    if (!at::isFloatingType(output.scalar_type()))
      throw UsageError("model.torchscript '" + file + "' gives " + std::string(c10::toString(output.scalar_type())) +
                           " outputs; the loss needs floating-point logits or values",
                       "return the last layer's output itself, without .long(), .argmax() or a comparison, and script it again");
    const bool fits = output.dim() == 2 && output.size(0) == n && (classification ? output.size(1) >= wanted : output.size(1) == wanted);
    if (!fits)
      throw UsageError("model.torchscript '" + file + "' gives " + c10::str(output.sizes()) + " for a batch of " + std::to_string(n) +
                           " samples shaped " + sample + even + "; the loss needs [" + std::to_string(n) + ", " + std::to_string(wanted) +
                           "]: " +
                           (classification ? "a logit for each of the " + std::to_string(wanted) + " classes"
                                           : "a value for each of the " + std::to_string(wanted) + " regression targets"),
                       "end the model with a layer of " + std::to_string(wanted) + " outputs (e.g. nn.Linear(..., " +
                           std::to_string(wanted) + ")), for every batch size, and script it again");
    if (training && !output.requires_grad())  // LibTorch's backward would fail with "element 0 of tensors does not require grad"
      throw UsageError("model.torchscript '" + file +
                           "' gives an output that no parameter that trains leads to (it has no gradient "
                           "graph): no step could change the weights",
                       "return the layers' output itself, not one cut off by .detach(), torch.no_grad() or a new tensor "
                       "(torch.zeros(...)) in forward, and script it again");
    even = " (a batch of 2 gave " + c10::str(output.sizes()) + ": its shape follows the batch's)";
  }
}

}  // namespace gputrain::train
