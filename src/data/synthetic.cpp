#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>

#include "synthetic_teacher.hpp"

namespace gputrain::data {

namespace {

constexpr std::int64_t kViewFeatures = 16;
// For z ~ N(0, 1): E[relu(z)] = 1/sqrt(2 pi) and Var[relu(z)] = 1/2 - 1/(2 pi).
const double kReluMean = 1.0 / std::sqrt(2.0 * M_PI);
const double kReluStd = std::sqrt(0.5 - 1.0 / (2.0 * M_PI));

// Unit-norm filters, so each response to standard-normal inputs is itself standard normal.
at::Tensor unit_filters(const std::vector<std::int64_t>& shape, at::Generator& gen) {
  const auto filters = at::randn(shape, gen);
  std::vector<std::int64_t> per_filter(shape.size(), 1);
  per_filter[0] = shape[0];
  return filters / filters.flatten(1).norm(2, {1}).reshape(per_filter);
}

at::Tensor as_images(const at::Tensor& inputs) {  // [n, C, H, W, ...] -> [n, C, H, rest]
  return inputs.reshape({inputs.size(0), inputs.size(1), inputs.size(2), -1});
}

}  // namespace

SyntheticTeacher::SyntheticTeacher(const SyntheticSpec& spec) : task_(spec.task) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed);
  const auto& shape = spec.shape;
  std::int64_t features = 1;
  for (auto extent : shape) features *= extent;
  if (shape.size() == 2) {
    filters_ = unit_filters({kViewFeatures, shape[1]}, gen);
    features = kViewFeatures;
  } else if (shape.size() >= 3) {
    std::int64_t width = 1;
    for (std::size_t d = 2; d < shape.size(); ++d) width *= shape[d];
    filters_ = unit_filters({kViewFeatures, shape[0], std::min<std::int64_t>(shape[1], 3), std::min<std::int64_t>(width, 3)}, gen);
    features = kViewFeatures;
  }
  map_ = at::randn({features, spec.outputs}, gen) / std::sqrt(static_cast<double>(features));
}

at::Tensor SyntheticTeacher::responses(const at::Tensor& inputs) const {  // [n, positions, features]
  if (inputs.dim() == 3) return inputs.matmul(filters_.t());
  return at::conv2d(as_images(inputs), filters_).flatten(2).transpose(1, 2);
}

at::Tensor SyntheticTeacher::features(const at::Tensor& inputs) const {
  if (!filters_.defined()) return inputs.reshape({inputs.size(0), -1});
  // In chunks of about 64 MiB of responses: a whole image set at once would need 16 feature maps
  // per image (3 GiB for 50,000 CIFAR-sized images).
  const auto positions = responses(inputs.narrow(0, 0, std::min<std::int64_t>(1, inputs.size(0)))).size(1);
  const std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / (positions * kViewFeatures * 4));
  std::vector<at::Tensor> parts;
  for (std::int64_t start = 0; start < inputs.size(0); start += chunk) {
    const auto r = responses(inputs.narrow(0, start, std::min(chunk, inputs.size(0) - start)));
    // Scaled as if the positions were independent: exact for sequences; overlapping 3x3 patches
    // are correlated, which changes the scale a little, never the zero mean.
    parts.push_back((r.relu().mean(1) - kReluMean) * (std::sqrt(static_cast<double>(positions)) / kReluStd));
  }
  return parts.empty() ? at::zeros({0, kViewFeatures}) : at::cat(parts);
}

at::Tensor SyntheticTeacher::targets(const at::Tensor& inputs) const {
  const auto projected = features(inputs).matmul(map_);
  return task_ == "classification" ? projected.argmax(1) : projected;
}

// The seeds and the order of the draws are part of the data's definition (bench/train_vs_pytorch.py
// rebuilds the same tensors in Python): the teacher from `seed`, split k's inputs from `seed + 1 + k`.
TensorDataset make_synthetic(const SyntheticSpec& spec, std::int64_t samples, int split) {
  auto input_gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed + 1 + static_cast<std::uint64_t>(split));
  std::vector<std::int64_t> shape{samples};
  shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
  TensorDataset set;
  set.inputs = at::randn(shape, input_gen);
  set.targets = SyntheticTeacher(spec).targets(set.inputs);
  return set;
}

}  // namespace gputrain::data
