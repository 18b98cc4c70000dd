#pragma once
// One optimizer step, shared by the Trainer and the batch-size probes, so the probes measure
// exactly what training will run: forward and backward in micro-batches (autocast, channels_last,
// each micro-batch's loss weighted by its share of the step), then unscale, clip, step, update.

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "gputrain/data/batch.hpp"
#include "gputrain/train/config.hpp"

namespace torch::optim {
class Optimizer;
}

namespace gputrain::dist {
class GradientSync;
}

namespace gputrain::train {

class Model;
class GradScaler;
class DirectBackward;

/// What a step works on; references only, owned by the caller.
struct StepParts {
  Model& model;
  torch::optim::Optimizer& optimizer;
  GradScaler& scaler;
  const std::vector<at::Tensor>& params;
  const data::BatchTransform& transform;
  const TrainConfig& train;
  bool channels_last;                  ///< Config::uses_channels_last()
  bool classification;
  c10::Device device;
  std::int64_t global_rows = 0;        ///< samples in the step over all ranks; 0: this batch's own
  dist::GradientSync* sync = nullptr;  ///< armed before the last micro-batch's backward (distributed runs)
  DirectBackward* direct = nullptr;    ///< the hand-written backward, where it covers the model and the run
  at::Tensor class_weights;            ///< train.class_weights on the device, [classes]; undefined: every sample weighs 1
};

/// Cross-entropy for classification (with `label_smoothing`, PyTorch's: the target is that share
/// of the uniform distribution plus the rest on the class), MSE for regression.
/// With `class_weights` ([classes]), each sample's cross-entropy is multiplied by its class's
/// weight and the products are averaged over the samples. PyTorch's `weight=` divides by the sum
/// of the batch's weights instead; the plain mean keeps a batch's loss the sum of its parts, so
/// micro-batches (the OOM split, gradient accumulation) and ranks add up to the whole batch's
/// gradient exactly, as they do without weights.
at::Tensor loss_of(bool classification, const at::Tensor& output, const at::Tensor& target, double label_smoothing = 0.0,
                   const at::Tensor& class_weights = {});

/// A micro-batch's stored inputs as the model takes them: through the transform (float,
/// normalisation, augmentation when `training`), then NHWC when `channels_last`.
at::Tensor model_input(const data::BatchTransform& transform, bool channels_last, const at::Tensor& stored, bool training);

/// Forward and backward over `batch`, `micro_batch` samples at a time (each prepared by the
/// transform: float conversion, normalisation, augmentation), each micro-batch's mean loss
/// weighted by its share (of `global_rows` when set: the step's samples over all ranks), so the
/// gradient equals one big batch's whatever the split; summed over ranks, the global batch's.
/// Returns the step's mean loss (a device scalar, not synced). `after_forward`, when set, runs
/// after each micro-batch's forward and before its backward (the probes measure activations there).
/// With `parts.direct` set, the micro-batches it takes skip autograd, with the same gradients.
at::Tensor accumulate_gradients(const StepParts& parts, const data::Batch& batch, std::int64_t micro_batch,
                                const std::function<void()>& after_forward = {});

/// Unscale (fp16), clip, optimizer step (skipped on inf/nan), scaler update, gradients to none.
void apply_gradients(const StepParts& parts);

/// Creates the optimizer's state (momentum buffers, Adam's moments) without a forward pass, by
/// stepping once on zero gradients: the batch-size probes then measure it as the run will hold it.
/// It changes the parameters (weight decay), so use it only on a model that is thrown away.
void create_optimizer_state(const StepParts& parts);

}  // namespace gputrain::train
