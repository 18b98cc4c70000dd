#pragma once
// Autocast's weight casts batched. Under bf16/fp16 autocast every convolution and linear layer
// casts its fp32 weight (and bias) to the low precision in a kernel of its own each forward, and
// its gradient back to fp32 in another in backward: 44 small kernels a ResNet-18 step.
// BatchedWeightCasts casts a built-in model's weights in one multi-tensor copy
// (at::_foreach_copy_) before the forward and points the layers at the copies until the forward
// ends; their gradients come back to fp32 in one copy per group. The values are autocast's bit for
// bit: the same rounding forward, an exact widening backward.

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
  /// The fp32 weights and biases of `module`'s convolutions, linear layers and AutocastWeights.
  explicit BatchedWeightCasts(torch::nn::Module& module);
  /// Whether there is nothing to cast.
  bool empty() const { return trainable_.empty() && frozen_.empty(); }
  /// Weights cast (a weight two layers share counts twice), trainable and frozen.
  std::size_t size() const { return trainable_.size() + frozen_.size(); }

  /// While alive, the layers' slots hold `dtype` copies of their weights. Trainable ones are cast
  /// anew, all in one copy, and handed out by an autograd node per group of consecutive weights,
  /// at most `group_elements` of them (whose backward casts the group's gradients back in one
  /// copy); frozen ones (requires_grad
  /// off) keep their copies from one cast to the next, copied again only once the weight changed.
  /// The destructor puts the weights back, also when the forward throws.
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
  Scope cast(c10::ScalarType dtype, const BucketOf& bucket_of = {}, std::int64_t group_elements = kGroupElements);

  /// Backward keeps a group's low-precision gradients until its last one is ready, and passes none
  /// on before: groups bound that memory (32 MiB in bf16). ResNet-18's 11M weights are one group.
  static constexpr std::int64_t kGroupElements = std::int64_t{16} << 20;

 private:
  struct Weight {
    at::Tensor* slot;  // the layer's member that holds it
    at::Tensor weight;
    at::Tensor copy;  // frozen weights: the low-precision copy kept, and the weight's version it holds
    std::uint32_t version = 0;
  };
  std::vector<at::Tensor> cast_trainable(c10::ScalarType dtype, const BucketOf& bucket_of, std::int64_t group_elements) const;
  void refresh_frozen(c10::ScalarType dtype);
  std::vector<Weight> trainable_, frozen_;  // in the modules' order
};

/// The casts `model`'s layers take under autocast to `dtype`: those of a built-in model (a
/// TorchScript or registered model's forward may read a weight elsewhere, where a low-precision
/// copy would change what it computes); none for fp32, or under GPUTRAIN_WEIGHT_CASTS=per-layer,
/// which leaves every cast to autocast, for comparison.
std::optional<BatchedWeightCasts> batched_weight_casts(Model& model, c10::ScalarType dtype);

}  // namespace gputrain::train
