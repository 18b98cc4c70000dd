#pragma once
// A batch as the training step receives it, and what turns its stored form into model input.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace gputrain::data {

/// Inputs in their stored dtype (uint8 images stay uint8 until BatchTransform) and targets.
struct Batch {
  at::Tensor inputs, targets;
  std::int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

/// Per-batch preparation on the batch's device: to float32 (uint8 scaled to [0, 1]), then
/// (x - mean) / std per channel, then, for training batches of images [N, C, H, W], random crop
/// with zero padding and random horizontal flip. Nothing is copied when nothing applies.
/// Regression targets may be standardised too (data.standardize_targets): the model learns
/// (y - target_mean) / target_std, and predictions() maps its outputs back to the targets' units.
struct BatchTransform {
  std::vector<double> mean, std;                ///< per channel (dimension 1); empty: none
  std::int64_t crop_padding = 0;                ///< random crop of the original size from the padded image
  bool hflip = false;                           ///< flip each image left-right with probability 1/2
  std::vector<double> target_mean, target_std;  ///< per regression target (dimension 1); empty: none
  /// A batch as the model reads it: float (uint8 scaled to [0, 1]), normalised, and when
  /// `training` augmented (images: the crop, the flip).
  at::Tensor apply(const at::Tensor& inputs, bool training) const;
  /// The targets the loss compares the model's output with: standardised when target_mean is set.
  at::Tensor targets(const at::Tensor& stored) const;
  /// The model's outputs in the targets' own units (outputs * target_std + target_mean).
  at::Tensor predictions(const at::Tensor& outputs) const;

 private:
  // On the device of the last batch, so a step copies nothing.
  mutable at::Tensor mean_, std_, target_mean_, target_std_;
};

/// Per-channel (dimension 1) mean and standard deviation of `inputs` as BatchTransform sees them
/// (uint8 scaled to [0, 1]), over every other dimension: what `data.standardize` normalises with.
/// Summed in float64 a chunk of samples at a time, so a large uint8 set is never copied whole.
struct ChannelStats {
  std::vector<double> mean, std;                ///< std is the population standard deviation
  std::vector<std::int64_t> constant_channels;  ///< no spread: std set to 1, so they are only centred; ascending
};
ChannelStats measure_channel_stats(const at::Tensor& inputs);

/// The same figures summed over several batches of samples (a dataset read a chunk at a time).
class ChannelSums {
 public:
  void add(const at::Tensor& inputs);  ///< [N, C, ...], N >= 1
  std::int64_t samples() const { return samples_; }
  ChannelStats stats() const;  ///< needs samples() > 0

 private:
  at::Tensor sum_, sum_sq_;  // float64 [C]
  double values_per_channel_ = 0;
  std::int64_t samples_ = 0;
};

}  // namespace gputrain::data
