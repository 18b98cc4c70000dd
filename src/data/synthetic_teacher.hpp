#pragma once
// The fixed random "teacher" that labels the synthetic task (data::make_synthetic). Private to the
// data area; tests use it to check what the labels depend on.

#include <ATen/core/Tensor.h>

#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

/// Features, then a linear map to `outputs` values (argmax for classification). Vectors are seen as
/// they are. Images [C, H, W] and sequences [T, F] are seen the way a convolutional network or a
/// transformer sees them: the mean over positions of a ReLU of local responses (a fixed random 3x3
/// convolution without padding over the image averaged over at most 16 x 16 cells, or a per-step
/// projection), standardised, with per-class offsets that give every class an even share. So a
/// label does not depend on where in the image or the sequence something is, and the built-in
/// models, which pool over positions, can learn it.
class SyntheticTeacher {
 public:
  /// Draws from `spec.seed`, in this order: the view's filters and a reference set to standardise
  /// its features and balance the classes on (images and sequences), then the map.
  explicit SyntheticTeacher(const SyntheticSpec& spec);

  /// inputs [n, spec.shape...] -> class ids [n] or regression targets [n, outputs].
  at::Tensor targets(const at::Tensor& inputs) const;

 private:
  at::Tensor features(const at::Tensor& inputs) const;
  at::Tensor raw_features(const at::Tensor& inputs) const;
  at::Tensor responses(const at::Tensor& inputs) const;

  std::string task_;
  at::Tensor filters_;        // undefined for vectors
  at::Tensor mean_, scale_;   // of the raw features on the reference set
  at::Tensor map_;            // [features, outputs]
  at::Tensor offsets_;        // [outputs], subtracted before the argmax (zeros for vectors)
};

}  // namespace gputrain::data
