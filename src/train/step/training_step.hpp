#pragma once
// What a training step works on (StepParts) and the pieces every step backend and the validation
// pass share: the loss, and a batch's inputs as the model takes them. The step itself is the
// StepEngine's (step_engine.hpp).

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
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
class BatchNormSync;
class OptimizerShards;

/// What a step reads out of its gradients when asked: their global norm (logging.grad_norm, on
/// logged steps), a copy of them (a callback's histograms).
struct GradientReadout {
  bool norms = false;   ///< logging.grad_norm: norms may be asked for (a captured graph measures every step's)
  bool wanted = false;  ///< measure the next steps' norm
  at::Tensor value;     ///< the last measured step's, a device scalar
  /// Keep a copy of the next step's gradients (unscaled, as applied) in `gradients`, in the
  /// parameters' order, for a callback to read (histograms). A replayed CUDA graph gives the ones
  /// it holds in its pool instead (no copy; read them before the next step).
  bool keep_gradients = false;
  std::vector<at::Tensor> gradients;
  /// Hold the next step's applied gradients themselves in `held` (no copy), in the parameters'
  /// order (undefined where none): a captured step's stay in its pool, where a logged step
  /// measures their norm and a callback reads them after the replay.
  bool hold_gradients = false;
  std::vector<at::Tensor> held;
};

/// What a step works on; references only, owned by the caller.
struct StepParts {
  Model& model;
  torch::optim::Optimizer& optimizer;
  GradScaler& scaler;
  const std::vector<at::Tensor>& params;
  const data::BatchTransform& transform;
  const TrainConfig& train;
  bool channels_last;  ///< Config::uses_channels_last()
  bool classification;
  c10::Device device;
  dist::GradientSync* sync = nullptr;  ///< armed before the last micro-batch's backward (distributed runs)
  at::Tensor class_weights;            ///< train.class_weights on the device, [classes]; undefined: every sample weighs 1
  GradientReadout* readout = nullptr;  ///< set: the norm and the gradients are read out when it asks
  /// model.sync_batch_norm on several ranks: every rank runs its forwards() passes in a step,
  /// empty ones where its share has run out, so the statistics exchanges pair up.
  BatchNormSync* norm_sync = nullptr;
  const data::Batch* no_rows = nullptr;  ///< with norm_sync: a batch of no samples, shaped and typed as the data's
  /// distributed.shard_optimizer: the optimizer steps this rank's parameters; the owners share theirs after it.
  OptimizerShards* shards = nullptr;
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

}  // namespace gputrain::train
