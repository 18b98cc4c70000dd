#include "training_step.hpp"

#include <ATen/ATen.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>

#include "direct_backward.hpp"
#include "gputrain/dist/gradient_sync.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/model.hpp"

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

at::Tensor accumulate_gradients(const StepParts& p, const data::Batch& batch, std::int64_t micro_batch,
                                const std::function<void()>& after_forward) {
  const std::int64_t n = batch.size();
  const double share_of = static_cast<double>(p.global_rows > 0 ? p.global_rows : n);
  at::Tensor step_loss;
  for (std::int64_t start = 0; start < n; start += micro_batch) {
    const std::int64_t end = std::min(n, start + micro_batch);
    const auto inputs = model_input(p.transform, p.channels_last, batch.inputs.slice(0, start, end), /*training=*/true);
    const auto targets = p.transform.targets(batch.targets.slice(0, start, end));
    const double share = static_cast<double>(end - start) / share_of;
    if (p.direct && p.direct->takes(inputs, targets, p.classification)) {
      if (p.sync && end == n) p.sync->arm();  // as below: the last backward's gradients are final
      const auto loss = p.direct->train(inputs, targets, p.classification, p.class_weights, share, after_forward, p.sync);
      step_loss = step_loss.defined() ? step_loss + loss : loss;
      continue;
    }
    at::Tensor loss;
    {
      AutocastScope autocast(p.device.type(), p.train.precision);
      loss = loss_of(p.classification, p.model.forward(inputs), targets, p.train.label_smoothing, p.class_weights);
      if (share != 1.0) loss = loss * share;  // the whole batch in one piece needs no weighting (one op less each way)
    }
    if (after_forward) after_forward();
    // Only the last backward's gradients are final: its hooks send them while it runs.
    if (p.sync && end == n) p.sync->arm();
    p.scaler.scale(loss).backward();
    const auto detached = loss.detach().to(at::kFloat);
    step_loss = step_loss.defined() ? step_loss + detached : detached;
  }
  return step_loss.defined() ? step_loss : at::zeros({}, at::TensorOptions().device(p.device));
}

void apply_gradients(const StepParts& p) {
  if (p.train.clip_grad_norm > 0) {
    p.scaler.unscale(p.params);
    torch::nn::utils::clip_grad_norm_(p.params, p.train.clip_grad_norm);
  }
  p.scaler.step(p.params, [&] { p.optimizer.step(); });
  p.scaler.update();
  p.optimizer.zero_grad(/*set_to_none=*/true);
}

void create_optimizer_state(const StepParts& p) {
  {
    at::NoGradGuard no_grad;
    for (const auto& param : p.params) param.mutable_grad() = at::zeros_like(param);
  }
  p.optimizer.step();
  p.optimizer.zero_grad(/*set_to_none=*/true);
}

}  // namespace gputrain::train
