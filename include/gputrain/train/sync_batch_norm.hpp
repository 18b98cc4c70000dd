#pragma once
// Batch norm that can normalise over every rank's samples (model.sync_batch_norm). The built-in
// models build their batch-norm layers from these; a C++ model of your own uses them in place of
// torch::nn::BatchNorm1d/2d to take part. Until a run with several ranks attaches a BatchNormSync,
// they are torch::nn's BatchNorm (same state_dict names, same forward). In training on a GPU, with
// channels-last bf16 or fp16 activations, they normalise in gputrain's own kernels, and
// forward_relu / forward_add_relu fold a block's ReLU and residual add into the same passes.

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <optional>
#include <string>

namespace gputrain::train {

/// The ranks' exchange of batch statistics for one run (src/train/models/layers/sync_batch_norm.hpp).
class BatchNormSync;

/// The layers' side of the conversion: what the set-up finds by dynamic_cast.
class SyncableNorm {
 public:
  virtual ~SyncableNorm() = default;
  /// Training-mode forwards from now on normalise with the statistics of all ranks' samples;
  /// `name` (the layer's, "layer1.0.bn1") is said in errors. nullptr: this rank's alone again.
  virtual void synchronise_with(std::shared_ptr<BatchNormSync> sync, std::string name) = 0;
};

/// A batch-norm layer's tensors and settings, as the synchronised forward reads them.
struct BatchNormTensors {
  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  const torch::nn::BatchNormOptions& options;
};

/// The synchronised training forward (PyTorch's SyncBatchNorm, sync_batch_norm.cpp).
at::Tensor synchronised_batch_norm(const at::Tensor& input, const BatchNormTensors& layer, BatchNormSync& sync, const std::string& name);

/// relu?(batch norm(input) + residual?) in training mode by gputrain's kernels for channels-last
/// bf16/fp16 input on a GPU (src/train/models/layers/fused_batch_norm.cpp), the running statistics
/// and num_batches_tracked updated (the count by the pass that updates the statistics). nullopt
/// where they do not apply (CPU, fp32, NCHW,
/// channels not a multiple of 8, no momentum, GPUTRAIN_BATCH_NORM=aten): run the composite then.
std::optional<at::Tensor> fused_batch_norm(const at::Tensor& input, const at::Tensor& residual, const BatchNormTensors& layer, bool relu);

/// A layer's output that two layers read, such as a residual block's input (its first convolution
/// and its shortcut): the same values, one tensor for each reader. Through gputrain's kernels the
/// two are one memory and the layer's backward adds the readers' gradients in its own first pass,
/// where autograd would add them in a kernel of its own (a read of both and a write, per block).
struct ForkedOutput {
  at::Tensor main, shortcut;
  /// One tensor for both readers (autograd adds their gradients).
  static ForkedOutput same(const at::Tensor& t) { return {t, t}; }
};

/// fused_batch_norm with ReLU, its output forked; nullopt where the kernels do not apply.
std::optional<ForkedOutput> fused_batch_norm_forked(const at::Tensor& input, const at::Tensor& residual, const BatchNormTensors& layer);

template <typename Base>
class SyncableBatchNormImpl : public Base, public SyncableNorm {
 public:
  explicit SyncableBatchNormImpl(std::int64_t features) : Base(features) {}
  explicit SyncableBatchNormImpl(const torch::nn::BatchNormOptions& settings) : Base(settings) {}

  at::Tensor forward(const at::Tensor& input) { return normalise(input, at::Tensor(), false); }
  /// relu(forward(input)): one pass on a GPU instead of two.
  at::Tensor forward_relu(const at::Tensor& input) { return normalise(input, at::Tensor(), true); }
  /// relu(forward(input) + residual), a residual block's end: one pass on a GPU instead of three.
  at::Tensor forward_add_relu(const at::Tensor& input, const at::Tensor& residual) { return normalise(input, residual, true); }
  /// forward_relu (residual undefined) or forward_add_relu, for an output two layers read.
  ForkedOutput forward_relu_forked(const at::Tensor& input, const at::Tensor& residual = {}) {
    if (this->is_training() && !sync_) {
      this->_check_input_dim(input);
      if (auto fused = fused_batch_norm_forked(input, residual, tensors())) return *fused;
    }
    return ForkedOutput::same(normalise(input, residual, true));
  }
  void synchronise_with(std::shared_ptr<BatchNormSync> sync, std::string name) override {
    sync_ = std::move(sync);
    name_ = std::move(name);
  }

 private:
  BatchNormTensors tensors() const {
    return {this->weight, this->bias, this->running_mean, this->running_var, this->num_batches_tracked, this->options};
  }
  at::Tensor normalise(const at::Tensor& input, const at::Tensor& residual, bool relu) {
    at::Tensor out;
    if (this->is_training()) this->_check_input_dim(input);
    if (this->is_training() && sync_) {
      out = synchronised_batch_norm(input, tensors(), *sync_, name_);
    } else if (auto fused = this->is_training() ? fused_batch_norm(input, residual, tensors(), relu) : std::nullopt) {
      return *fused;
    } else {
      out = Base::forward(input);
    }
    if (residual.defined()) out = out + residual;
    return relu ? at::relu(out) : out;
  }

  std::shared_ptr<BatchNormSync> sync_;
  std::string name_;
};

using SyncableBatchNorm1dImpl = SyncableBatchNormImpl<torch::nn::BatchNorm1dImpl>;
using SyncableBatchNorm2dImpl = SyncableBatchNormImpl<torch::nn::BatchNorm2dImpl>;
TORCH_MODULE(SyncableBatchNorm1d);
TORCH_MODULE(SyncableBatchNorm2d);

}  // namespace gputrain::train
