#include "weight_casts.hpp"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "gputrain/core/env.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "layer_switches.hpp"

namespace gputrain::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A group of fp32 weights' low-precision copies as one autograd node: forward hands out the
// copies, made before for all groups at once (ATen's multi-tensor copy runs a block per 64K
// elements: a copy per group of 4M ran 64 blocks at a time, a third of an H200); backward casts
// the group's gradients back to fp32 in one copy. The fp32 gradients keep each incoming
// gradient's strides, as autocast's per-layer cast's backward (ToCopyBackward) gives them.
struct CastGroup : torch::autograd::Function<CastGroup> {
  // The weights are inputs for their edges only: backward's gradients go to them.
  static variable_list forward(AutogradContext*, at::TensorList /*weights*/, const std::vector<at::Tensor>* copies) { return *copies; }
  static variable_list backward(AutogradContext*, variable_list grads) {
    variable_list widened(grads.size() + 1);  // the last for `copies`, which has none
    std::vector<at::Tensor> from, to;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) continue;  // a copy no layer used with a gradient (a recomputed block's)
      widened[i] = at::empty_like(grads[i], grads[i].options().dtype(at::kFloat));
      from.push_back(grads[i]);
      to.push_back(widened[i]);
    }
    if (!from.empty()) at::_foreach_copy_(to, from);
    return widened;
  }
};

template <typename Layer>
bool add_members(torch::nn::Module& m, std::vector<at::Tensor*>& slots) {
  auto* layer = dynamic_cast<Layer*>(&m);
  if (!layer) return false;
  slots.push_back(&layer->weight);
  slots.push_back(&layer->bias);
  return true;
}

void add_slots(torch::nn::Module& m, std::vector<at::Tensor*>& slots) {
  if (add_members<torch::nn::Conv1dImpl>(m, slots) || add_members<torch::nn::Conv2dImpl>(m, slots) ||
      add_members<torch::nn::Conv3dImpl>(m, slots) || add_members<torch::nn::LinearImpl>(m, slots))
    return;
  if (auto* own = dynamic_cast<AutocastWeights*>(&m)) own->add_autocast_weights(slots);
}

}  // namespace

BatchedWeightCasts::BatchedWeightCasts(torch::nn::Module& module) {
  std::vector<at::Tensor*> slots;
  add_slots(module, slots);
  for (const auto& child : module.modules(/*include_self=*/false)) add_slots(*child, slots);
  // A weight two layers share gets a copy for each, whose gradients are widened apart and summed in
  // fp32, as autocast's casts of it per use give them (its cache holds no cast inside a CUDA graph,
  // nor of the transposed view a linear layer's product takes on the CPU).
  for (auto* slot : slots) {
    const auto& w = *slot;
    // What autocast would cast: fp32 leaves (a bias-free layer's bias is undefined).
    if (!w.defined() || w.scalar_type() != at::kFloat || !w.is_leaf()) continue;
    (w.requires_grad() ? trainable_ : frozen_).push_back({slot, w, {}, 0});
  }
}

std::vector<at::Tensor> BatchedWeightCasts::cast_trainable(c10::ScalarType dtype, const BucketOf& bucket_of,
                                                           std::int64_t group_elements) const {
  std::vector<at::Tensor> casts, from;
  casts.reserve(trainable_.size());
  for (const auto& t : trainable_) {
    casts.push_back(at::empty_like(t.weight, t.weight.options().dtype(dtype)));
    from.push_back(t.weight);
  }
  if (!casts.empty()) {
    at::NoGradGuard no_grad;  // the groups' nodes below carry the gradients
    at::_foreach_copy_(casts, from);
  }
  std::vector<std::size_t> group;
  std::int64_t elements = 0, bucket = -1;
  const auto cast_group = [&] {
    std::vector<at::Tensor> inputs, copies;
    for (const auto i : group) inputs.push_back(trainable_[i].weight), copies.push_back(casts[i]);
    const auto outputs = CastGroup::apply(at::TensorList(inputs), &copies);
    for (std::size_t k = 0; k < group.size(); ++k) casts[group[k]] = outputs[k];
    group.clear();
    elements = 0;
  };
  for (std::size_t i = 0; i < trainable_.size(); ++i) {
    const auto& w = trainable_[i].weight;
    const std::int64_t its_bucket = bucket_of ? bucket_of(w) : -1;
    if (!group.empty() && (elements + w.numel() > group_elements || its_bucket != bucket)) cast_group();
    group.push_back(i);
    elements += w.numel();
    bucket = its_bucket;
  }
  if (!group.empty()) cast_group();
  return casts;
}

// A frozen weight changes only where something writes it in place (a checkpoint loaded, EMA's swap
// for validation), which bumps its version; the copy is rewritten where it is, so that a captured
// step reading it keeps its address.
void BatchedWeightCasts::refresh_frozen(c10::ScalarType dtype) {
  std::vector<at::Tensor> from, to;
  for (auto& f : frozen_) {
    const bool fresh = !f.copy.defined() || f.copy.scalar_type() != dtype;
    if (!fresh && f.version == f.weight._version()) continue;
    if (fresh) f.copy = at::empty_like(f.weight, f.weight.options().dtype(dtype));
    from.push_back(f.weight);
    to.push_back(f.copy);
    f.version = f.weight._version();
  }
  if (from.empty()) return;
  at::NoGradGuard no_grad;
  at::_foreach_copy_(to, from);
}

BatchedWeightCasts::Scope BatchedWeightCasts::cast(c10::ScalarType dtype, const BucketOf& bucket_of, std::int64_t group_elements) {
  Scope scope;
  if (empty()) return scope;
  RECORD_USER_SCOPE("gputrain::weight_casts");  // a named range in profiler traces
  const auto casts = cast_trainable(dtype, bucket_of, group_elements);
  refresh_frozen(dtype);
  scope.restore_.reserve(size());
  for (std::size_t i = 0; i < trainable_.size(); ++i) {
    scope.restore_.emplace_back(trainable_[i].slot, *trainable_[i].slot);
    *trainable_[i].slot = casts[i];
  }
  for (auto& f : frozen_) {
    scope.restore_.emplace_back(f.slot, *f.slot);
    *f.slot = f.copy;
  }
  return scope;
}

BatchedWeightCasts::Scope::~Scope() {
  // Last first: a module reached twice (a shared submodule) had its member swapped twice.
  for (auto it = restore_.rbegin(); it != restore_.rend(); ++it) *it->first = std::move(it->second);
}

// Read at each step's plan, not once: the tests compare both ways in one process.
bool weight_casts_per_layer() {
  return core::env_choice("GPUTRAIN_WEIGHT_CASTS", {"per-layer"}, "one multi-tensor copy each way").has_value();
}

std::optional<BatchedWeightCasts> batched_weight_casts(Model& model, c10::ScalarType dtype) {
  if (dtype == at::kFloat || !model.module() || !model_keys_read(model.name())) return std::nullopt;
  if (weight_casts_per_layer()) return std::nullopt;
  BatchedWeightCasts casts(*model.module());
  if (casts.empty()) return std::nullopt;
  return casts;
}

}  // namespace gputrain::train
