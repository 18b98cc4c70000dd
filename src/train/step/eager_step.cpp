// The eager step backend: autograd's backward, then unscale, clip and the fused optimizer, each
// launched as the host reaches it.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/optim/optimizer.h>

#include <optional>

#include "gputrain/dist/gradient_sync.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/model.hpp"
#include "grad_clip.hpp"
#include "step_engine.hpp"
#include "train/models/layers/sync_batch_norm.hpp"
#include "train/models/layers/weight_casts.hpp"

namespace gputrain::train {
namespace {

class EagerStep final : public StepBackend {
 public:
  at::Tensor accumulate(const StepParts& p, const data::Batch& batch, std::int64_t micro_batch, std::int64_t global_rows,
                        const std::function<void()>& after_forward) override {
    const std::int64_t n = batch.size();
    const double share_of = static_cast<double>(global_rows > 0 ? global_rows : n);
    std::int64_t forwards = (n + micro_batch - 1) / micro_batch;
    if (p.norm_sync) forwards = std::max(forwards, p.norm_sync->forwards());  // join the other ranks' passes, emptily
    at::Tensor step_loss;
    for (std::int64_t pass = 0; pass < forwards; ++pass) {
      const std::int64_t start = std::min(n, pass * micro_batch), end = std::min(n, start + micro_batch);
      const auto inputs = model_input(p.transform, p.channels_last, batch.inputs.slice(0, start, end), /*training=*/true);
      const auto targets = p.transform.targets(batch.targets.slice(0, start, end));
      const double share = static_cast<double>(end - start) / share_of;
      at::Tensor loss;
      {
        RECORD_USER_SCOPE("gputrain::forward");  // the trace's names (train.profile)
        AutocastScope autocast(p.device.type(), p.train.precision);
        // The layers' weights in one cast (weight_casts.hpp), planned at the first step.
        const auto dtype = compute_dtype(p.train.precision);
        if (!casts_planned_) {
          casts_ = batched_weight_casts(p.model, dtype);
          casts_planned_ = true;
        }
        const auto cast_weights = casts_ ? casts_->cast(dtype, bucket_of(p)) : BatchedWeightCasts::Scope();
        const auto output = p.model.forward(inputs);
        if (end == start)
          loss = output.sum();  // an empty pass: zero, with zero gradients, but its backward exchanges too
        else
          loss = loss_of(p.classification, output, targets, p.train.label_smoothing, p.class_weights);
        if (share != 1.0 && end > start) loss = loss * share;  // the whole batch in one piece needs no weighting (one op less each way)
      }
      if (after_forward) after_forward();
      // Only the last backward's gradients are final: its hooks send them while it runs.
      if (p.sync && pass == forwards - 1) p.sync->arm();
      {
        RECORD_USER_SCOPE("gputrain::backward");
        p.scaler.scale(loss).backward();
      }
      const auto detached = loss.detach().to(at::kFloat);
      step_loss = step_loss.defined() ? step_loss + detached : detached;
    }
    return step_loss.defined() ? step_loss : at::zeros({}, at::TensorOptions().device(p.device));
  }

  void apply(const StepParts& p) override {
    if (p.sync) p.sync->finish();  // the sums in each .grad(); a captured step captures the wait too
    RECORD_USER_SCOPE("gputrain::optimizer");
    const bool measure = p.readout && p.readout->wanted;
    if (p.train.clip_grad_norm > 0 || measure) p.scaler.unscale(p.params);  // the norm of the true gradients
    if (p.train.clip_grad_norm > 0) {
      const auto norm = clip_grad_norm(p.params, p.train.clip_grad_norm);
      if (measure) p.readout->value = norm;
    } else if (measure) {
      p.readout->value = global_grad_norm(p.params);
    }
    p.scaler.step(p.params, p.optimizer);
    p.scaler.update();
    if (p.readout && p.readout->hold_gradients) {
      p.readout->held.clear();
      for (const auto& param : p.params) p.readout->held.push_back(param.grad());
    }
    if (p.readout && p.readout->keep_gradients) {
      p.readout->gradients.clear();
      for (const auto& param : p.params) p.readout->gradients.push_back(param.grad().defined() ? param.grad().clone() : at::Tensor());
    }
    p.optimizer.zero_grad(/*set_to_none=*/true);
  }

 private:
  static BatchedWeightCasts::BucketOf bucket_of(const StepParts& p) {
    if (!p.sync) return {};
    return [sync = p.sync](const at::Tensor& weight) { return sync->bucket_of(weight); };
  }
  bool casts_planned_ = false;
  std::optional<BatchedWeightCasts> casts_;
};

}  // namespace

std::unique_ptr<StepBackend> make_eager_backend() { return std::make_unique<EagerStep>(); }

}  // namespace gputrain::train
