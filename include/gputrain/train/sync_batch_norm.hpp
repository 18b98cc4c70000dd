#pragma once
// Batch norm that can normalise over every rank's samples (model.sync_batch_norm). The built-in
// models build their batch-norm layers from these; a C++ model of your own uses them in place of
// torch::nn::BatchNorm1d/2d to take part. Until a run with several ranks attaches a BatchNormSync,
// they are torch::nn's BatchNorm exactly (same state_dict names, same forward).

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/pimpl.h>

#include <memory>
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

template <typename Base>
class SyncableBatchNormImpl : public Base, public SyncableNorm {
 public:
  explicit SyncableBatchNormImpl(std::int64_t features) : Base(features) {}
  explicit SyncableBatchNormImpl(const torch::nn::BatchNormOptions& settings) : Base(settings) {}

  at::Tensor forward(const at::Tensor& input) {
    if (!sync_ || !this->is_training()) return Base::forward(input);
    this->_check_input_dim(input);
    return synchronised_batch_norm(
        input, BatchNormTensors{this->weight, this->bias, this->running_mean, this->running_var, this->num_batches_tracked, this->options},
        *sync_, name_);
  }
  void synchronise_with(std::shared_ptr<BatchNormSync> sync, std::string name) override {
    sync_ = std::move(sync);
    name_ = std::move(name);
  }

 private:
  std::shared_ptr<BatchNormSync> sync_;
  std::string name_;
};

using SyncableBatchNorm1dImpl = SyncableBatchNormImpl<torch::nn::BatchNorm1dImpl>;
using SyncableBatchNorm2dImpl = SyncableBatchNormImpl<torch::nn::BatchNorm2dImpl>;
TORCH_MODULE(SyncableBatchNorm1d);
TORCH_MODULE(SyncableBatchNorm2d);

}  // namespace gputrain::train
