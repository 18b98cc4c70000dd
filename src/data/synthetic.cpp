#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>

#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

namespace {

// What the teacher sees: images are average-pooled to at most 4x4 first, so the labels depend on
// coarse structure a CNN can learn, not on single pixels.
at::Tensor teacher_view(const at::Tensor& inputs) {
  if (inputs.dim() != 4) return inputs.reshape({inputs.size(0), -1});
  const std::int64_t h = std::min<std::int64_t>(inputs.size(2), 4), w = std::min<std::int64_t>(inputs.size(3), 4);
  const auto pooled = at::adaptive_avg_pool2d(inputs, {h, w});
  // Rescaled to unit variance again (a mean of k standard normals has variance 1/k).
  const double cell = static_cast<double>(inputs.size(2) * inputs.size(3)) / static_cast<double>(h * w);
  return pooled.reshape({inputs.size(0), -1}) * std::sqrt(cell);
}

}  // namespace

// The seeds below are part of the data's definition (bench/train_vs_pytorch.py rebuilds the same
// tensors in Python): teacher from `seed`, split k's inputs from `seed + 1 + k`.
TensorDataset make_synthetic(const SyntheticSpec& spec, std::int64_t samples, int split) {
  std::vector<std::int64_t> one{1};
  one.insert(one.end(), spec.shape.begin(), spec.shape.end());
  const std::int64_t features = teacher_view(at::zeros(one)).size(1);
  auto teacher_gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed);
  auto input_gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed + 1 + static_cast<std::uint64_t>(split));
  const auto teacher = at::randn({features, spec.outputs}, teacher_gen) / std::sqrt(static_cast<double>(features));
  std::vector<std::int64_t> shape{samples};
  shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
  TensorDataset set;
  set.inputs = at::randn(shape, input_gen);
  const auto projected = teacher_view(set.inputs).matmul(teacher);
  set.targets = spec.task == "classification" ? projected.argmax(1) : projected;
  return set;
}

}  // namespace gputrain::data
