#include "training_step.hpp"

#include <ATen/ATen.h>

namespace gputrain::train {

at::Tensor loss_of(bool classification, const at::Tensor& output, const at::Tensor& target, double label_smoothing,
                   const at::Tensor& class_weights) {
  if (!classification) return at::mse_loss(output, target);
  if (!class_weights.defined()) return at::cross_entropy_loss(output, target, {}, at::Reduction::Mean, -100, label_smoothing);
  const auto each = at::cross_entropy_loss(output, target, {}, at::Reduction::None, -100, label_smoothing);
  return (each * class_weights.index_select(0, target)).mean();
}

at::Tensor model_input(const data::BatchTransform& transform, bool channels_last, const at::Tensor& stored, bool training) {
  auto inputs = transform.apply(stored, training);
  if (channels_last && inputs.dim() == 4) inputs = inputs.contiguous(at::MemoryFormat::ChannelsLast);
  return inputs;
}

}  // namespace gputrain::train
