#pragma once
// A training step's backward pass written by hand for a plain stack of layers (the built-in MLP),
// so that the step skips autograd's own work: recording the graph, the engine, AccumulateGrad.
// On the 2-core CPU that is ~7 % of an MLP step, the margin between the MLP benchmark and its
// goal (docs/benchmarks.md). It calls the kernels autograd would call, on the same tensors, so
// the gradients are bit-identical to autograd's: tests/unit/train/test_direct_backward.cpp
// compares them for every layer kind, micro-batch splits and both losses. The one exception is
// by choice: on AMD processors with AVX-512 its Linears' products run on oneDNN rather than MKL
// (cpu_matmul.hpp: twice as fast there), which sums in another order, so the gradients are then
// autograd's within fp32 rounding (tested too).
//
// Used only where that comparison runs and where the step is worth it: fp32 on the CPU, for an
// nn::Sequential of Flatten (first), Linear, LayerNorm, ReLU, GELU, SiLU, Tanh and Dropout. With
// several ranks it hands each gradient to GradientSync as autograd's hook would, so the all-reduces
// still start while backward runs. Any other model or run trains through autograd, with the same
// results.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gputrain/train/config.hpp"
#include "train/models/layers/cpu_matmul.hpp"

namespace torch::nn {
class LinearImpl;
}  // namespace torch::nn

namespace gputrain::dist {
class GradientSync;
}  // namespace gputrain::dist

namespace gputrain::train {

class Model;

class DirectBackward {
 public:
  /// The plan for `model`, or nullptr when the model or the run is outside what this covers (see
  /// above). The plan reads the model's layers, so it must not outlive the model.
  static std::unique_ptr<DirectBackward> plan(Model& model, const TrainConfig& train, c10::Device device);
  ~DirectBackward();
  DirectBackward(const DirectBackward&) = delete;
  DirectBackward& operator=(const DirectBackward&) = delete;

  /// Whether a micro-batch fits the plan: float inputs that are 2-d once flattened, and class ids
  /// [N] (classification) or targets shaped like the output (regression). Others go to autograd.
  bool takes(const at::Tensor& inputs, const at::Tensor& targets, bool classification) const;

  /// The training-mode forward, the loss times `weight` (cross-entropy for classification, with
  /// train.label_smoothing and `class_weights` when defined, MSE otherwise, as train::loss_of),
  /// then its backward, which adds each parameter's gradient to its .grad() as AccumulateGrad
  /// would. `after_forward`, when set, runs between the two; `sync`, when set, hears of each
  /// gradient as it is added (GradientSync::gradient_ready). Returns the weighted loss, detached.
  at::Tensor train(const at::Tensor& inputs, const at::Tensor& targets, bool classification, const at::Tensor& class_weights,
                   double weight, const std::function<void()>& after_forward = {}, dist::GradientSync* sync = nullptr);

  /// For the run's notes, e.g. "6 layers" or "6 layers, oneDNN's matrix products".
  std::string describe() const;

  /// The library of the Linears' matrix products: the machine's choice (cpu_matmul_for_this_machine)
  /// unless set; CpuMatmul::mkl gives autograd's bits.
  void use_matmul(CpuMatmul library) { matmul_ = library; }
  CpuMatmul matmul_library() const { return matmul_; }

 private:
  struct Layer;
  explicit DirectBackward(std::vector<Layer> layers);
  std::vector<Layer> layers_;
  std::size_t first_with_parameters_ = 0;  // backward stops there: nothing before it needs a gradient
  std::int64_t outputs_ = 0;               // the last Linear's width: a regression target's
  double label_smoothing_ = 0;             // train.label_smoothing, in the cross-entropy and its gradient
  CpuMatmul matmul_ = CpuMatmul::mkl;

  at::Tensor linear_forward(const at::Tensor& x, const torch::nn::LinearImpl& linear) const;
};

}  // namespace gputrain::train
