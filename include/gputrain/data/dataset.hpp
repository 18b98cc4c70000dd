#pragma once
// A dataset as the loader sees it: N samples of one fixed layout, each readable on its own from
// any thread. Array formats (npy, npz, safetensors, CSV, MNIST, CIFAR-10) hold the whole set as
// two tensors; the image folder decodes one file per sample.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

/// Shape and dtype of one sample's input and target.
struct SampleLayout {
  std::vector<std::int64_t> input_shape, target_shape;  ///< target_shape is {} for a class id
  at::ScalarType input_dtype = at::kFloat, target_dtype = at::kLong;
  /// Bytes of one sample's input, and of its target.
  std::int64_t input_bytes() const;
  std::int64_t target_bytes() const;
};

/// A sample that cannot be read while the others can (a corrupt image): the loader skips it and
/// counts it instead of stopping the run.
class SkippedSample : public std::runtime_error {
 public:
  explicit SkippedSample(const std::string& what, std::string fix = "") : std::runtime_error(what), fix_(std::move(fix)) {}
  /// How to get such a sample back, when one way fits every file like it ("git lfs pull"); else empty.
  const std::string& fix() const { return fix_; }

 private:
  std::string fix_;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  virtual const SampleLayout& layout() const = 0;
  /// Writes sample `index` into `input` and `target` (contiguous, layout()'s dtypes and shapes).
  /// Safe to call from several threads at once. Throws SkippedSample for an unreadable sample.
  virtual void read(std::int64_t index, void* input, void* target) const = 0;
  /// Where sample `index` comes from, for error messages ("train/cat/017.jpg", "x.npy row 12").
  virtual std::string origin(std::int64_t index) const = 0;
  /// The whole set as CPU tensors when it already is in memory (array formats); nullopt otherwise.
  virtual std::optional<TensorDataset> tensors() const { return std::nullopt; }
  /// Every sample's class id (int64 [N]) when known without decoding the inputs: a set in
  /// memory's targets, an image folder's folder indices. nullopt for targets that are not class
  /// ids (regression) and for sets that only know a label by reading the sample.
  virtual std::optional<at::Tensor> class_ids() const;
  /// What the set is, for logs: "mnist train-images-idx3-ubyte (60,000 samples)".
  virtual std::string description() const = 0;
};

/// A dataset held as two CPU tensors (inputs [N, ...] and targets [N] or [N, k]).
std::shared_ptr<Dataset> make_array_dataset(TensorDataset set, std::string description, std::string origin_name);

/// A stand-in for `set` with its size, layout and description but none of its samples: what a
/// run keeps of its sources once a cache holds every sample, so that a table held in GPU memory
/// is not held in RAM as well. An array set's samples keep their names ("x.npy sample 12"), any
/// other's are "<description> sample 12"; reading one throws std::logic_error.
std::shared_ptr<const Dataset> described_only(const std::shared_ptr<const Dataset>& set);

/// Every sample read into two CPU tensors, in order, with `threads` threads; unreadable samples
/// (SkippedSample) are left out and returned in `skipped` as "origin: why".
struct Materialized {
  TensorDataset set;
  std::vector<std::string> skipped;
};
/// `progress`, when set, is called from one of the threads with (samples done, total) about every
/// 1 % of the way.
Materialized materialize(const Dataset& dataset, int threads,
                         const std::function<void(std::int64_t done, std::int64_t total)>& progress = {});

}  // namespace gputrain::data
