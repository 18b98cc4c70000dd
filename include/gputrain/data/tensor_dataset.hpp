#pragma once
// A dataset held as two tensors: inputs [N, ...] and targets [N] (class ids) or [N, outputs].

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gputrain::data {

struct TensorDataset {
  at::Tensor inputs;
  at::Tensor targets;
  std::int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

/// A learnable synthetic task: standard-normal inputs labelled by a fixed random "teacher" (argmax
/// for classification, its outputs themselves for regression): linear for vectors; for images and
/// sequences, linear in the mean over positions of a ReLU of a random 3x3 convolution or per-step
/// projection, so models that pool over positions can learn it. The teacher depends only on
/// `seed`, so a training and a validation set made with different `split` share the task.
struct SyntheticSpec {
  std::string task = "classification";  ///< classification or regression
  std::vector<std::int64_t> shape;      ///< one sample
  std::int64_t outputs = 10;            ///< classes, or regression targets
  std::uint64_t seed = 42;
};

/// Told how far make_synthetic is: `doing` ("generating", then "labelling"), and samples done of
/// `total`; may throw to stop it.
using SyntheticProgress = std::function<void(const std::string& doing, std::int64_t done, std::int64_t total)>;

/// `samples` samples of split `split` (0 train, 1 validation), reproducible from the seed: the same
/// values as Python's torch.randn(..., generator=torch.Generator().manual_seed(...)) would give.
/// A large set is made a chunk at a time, telling `progress` after each.
TensorDataset make_synthetic(const SyntheticSpec& spec, std::int64_t samples, int split, const SyntheticProgress& progress = {});

}  // namespace gputrain::data
