#pragma once
// Autocast's weight casts in one launch each way. Under bf16/fp16 autocast every convolution and
// linear layer casts its fp32 weight (and bias) to the low precision in a kernel of its own each
// forward, and its gradient back to fp32 in another in backward: two small kernels a layer, ~46 a
// ResNet-18 step. BatchedWeightCasts casts all of a built-in model's weights in one multi-tensor
// copy (at::_foreach_copy_) before the forward and points the layers at the copies until the
// forward ends; their gradients come back to fp32 in one copy per group. The values are autocast's
// bit for bit: the same rounding forward, an exact widening backward.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}

namespace gputrain::train {

class Model;

/// A module of ours whose forward passes weights of its own (not a Conv's or Linear's members) to
/// autocast's low-precision ops adds their slots here, so that they are cast with the others.
struct AutocastWeights {
  virtual ~AutocastWeights() = default;
  virtual void add_autocast_weights(std::vector<at::Tensor*>& slots) = 0;
};

class BatchedWeightCasts {
 public:
  /// The trainable fp32 weights and biases of `module`'s convolutions, linear layers and
  /// AutocastWeights (frozen ones keep autocast's own casts).
  explicit BatchedWeightCasts(torch::nn::Module& module);
  /// Whether there is nothing to cast.
  bool empty() const { return slots_.empty(); }
  /// Weights cast each forward (a weight two layers share counts twice).
  std::size_t size() const { return slots_.size(); }

  /// While alive, the layers' slots hold `dtype` copies of their weights, made by an autograd node
  /// per group of consecutive weights, at most `group_elements` of them (whose backward casts the
  /// group's gradients back in one copy). The destructor puts the weights back, also when the
  /// forward throws.
  class Scope {
   public:
    Scope() = default;  ///< holds nothing: the layers keep their weights
    Scope(Scope&&) noexcept = default;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class BatchedWeightCasts;
    std::vector<std::pair<at::Tensor*, at::Tensor>> restore_;
  };
  /// A weight's gradient bucket (DDP): a group then holds one bucket's weights, so that each bucket
  /// is still ready, and sent, as soon as backward has made its gradients.
  using BucketOf = std::function<std::int64_t(const at::Tensor& weight)>;
  Scope cast(c10::ScalarType dtype, const BucketOf& bucket_of = {}, std::int64_t group_elements = kGroupElements) const;

  /// Backward keeps a group's low-precision gradients until its last one is ready, and passes none
  /// on before: small groups bound that memory.
  static constexpr std::int64_t kGroupElements = std::int64_t{4} << 20;

 private:
  std::vector<at::Tensor*> slots_;  // the layers' members that hold a weight, in the modules' order
};

/// The casts `model`'s layers take under autocast to `dtype`: those of a built-in model (a
/// TorchScript or registered model's forward may read a weight elsewhere, where a low-precision
/// copy would change what it computes); none for fp32, or under GPUTRAIN_WEIGHT_CASTS=per-layer,
/// which leaves every cast to autocast, for comparison.
std::optional<BatchedWeightCasts> batched_weight_casts(Model& model, c10::ScalarType dtype);

}  // namespace gputrain::train
