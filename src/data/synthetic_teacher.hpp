#pragma once
// The fixed random "teacher" that labels the synthetic task (data::make_synthetic). Private to the
// data area; tests use it to check what the labels depend on.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>

#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

/// Features, then a linear map to `outputs` values (argmax for classification). Vectors are seen as
/// they are. Images [C, H, W] and sequences [T, F] are seen the way a convolutional network or a
/// transformer sees them: the mean over positions of a ReLU of local responses (a fixed random 3x3
/// convolution without padding over the image averaged over at most 16 x 16 cells, or a per-step
/// projection), standardised, with per-class offsets that give every class an even share (up to
/// 4096 classes, the reference samples they are balanced on; past that, none). So a
/// label does not depend on where in the image or the sequence something is, and the built-in
/// models, which pool over positions, can learn it.
class SyntheticTeacher {
 public:
  /// Draws from `spec.seed`, in this order: the view's filters and a reference set to standardise
  /// its features and balance the classes on (images and sequences), then the map.
  explicit SyntheticTeacher(const SyntheticSpec& spec);

  /// inputs [n, spec.shape...] -> class ids [n] or regression targets [n, outputs]; `labelled` is
  /// told the samples done so far, after each chunk (images and sequences).
  at::Tensor targets(const at::Tensor& inputs, const std::function<void(std::int64_t)>& labelled = {}) const;

 private:
  at::Tensor features(const at::Tensor& inputs, const std::function<void(std::int64_t)>& labelled) const;
  at::Tensor raw_features(const at::Tensor& inputs, const std::function<void(std::int64_t)>& labelled = {}) const;
  at::Tensor responses(const at::Tensor& inputs) const;

  std::string task_;
  at::Tensor filters_;       // undefined for vectors
  at::Tensor mean_, scale_;  // of the raw features on the reference set
  at::Tensor map_;           // [features, outputs]
  at::Tensor offsets_;       // [outputs], subtracted before the argmax (zeros for vectors)
};

/// make_synthetic's set, labelled by `teacher` (SyntheticTeacher(spec)'s): a run's two splits share one.
TensorDataset make_synthetic(const SyntheticTeacher& teacher, const SyntheticSpec& spec, std::int64_t samples, int split,
                             const SyntheticProgress& progress);

/// at::argmax(logits - offsets, 1) for float32 logits [rows, classes] and offsets [classes], the
/// same indices (the first largest, or the first NaN), without a [rows, classes] difference: the
/// class balancing takes it 200 times (with ATen's, a 10,000-class teacher took 25 s on 2 cores).
at::Tensor argmax_less_offsets(const at::Tensor& logits, const at::Tensor& offsets);

/// What making a synthetic set takes in RAM, in bytes (doubles: a shape's product may pass int64).
struct SyntheticMemory {
  double per_sample = 0;            ///< kept: a sample's float32 values and its target
  double labelling_per_sample = 0;  ///< while a split is labelled: its logits before the argmax
  double teacher = 0;               ///< the teacher itself: its map, reference set and reference logits
  double reference = 0;             ///< of which the reference set: 4096 samples as the teacher sees them
};
SyntheticMemory synthetic_memory(const SyntheticSpec& spec);

/// The synthetic inputs' values are drawn in blocks of kNormalBlockValues values of the flattened
/// tensor, block j by at::randn's CPU kernel from its own generator, seeded block_seed(seed, j): the
/// blocks are drawn in parallel, and the values do not depend on how many threads drew them
/// (bench/train_vs_pytorch.py draws the same in Python).
inline constexpr std::int64_t kNormalBlockValues = std::int64_t{1} << 22;
/// Block 0's is `seed` itself, so that a set of one block is at::randn's draw from `seed`, as all
/// sets were before they were drawn in blocks; block j's after it, SplitMix64's finaliser of
/// seed + j * the golden ratio (well spread for neighbouring seeds and blocks).
std::uint64_t block_seed(std::uint64_t seed, std::int64_t block);

/// Fills `out` (contiguous float32, samples along dimension 0) with standard normal values as
/// above, telling `filled` the whole samples drawn after each round of parallel blocks (a round is
/// as many blocks as ATen has threads).
void fill_standard_normal(at::Tensor& out, std::uint64_t seed, const std::function<void(std::int64_t)>& filled);

}  // namespace gputrain::data
