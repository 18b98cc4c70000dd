#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "gputrain/core/parallel_tasks.hpp"
#include "synthetic_teacher.hpp"

namespace gputrain::data {

namespace {

constexpr std::int64_t kViewFeatures = 16;
constexpr std::int64_t kReferenceSamples = 4096;  // to measure the view's mean and covariance

// The class offsets are balanced on the reference set only while it can give every class a share:
// past that the shares are mostly zero, and 200 rounds over 4096 x 1e6 logits took minutes.
bool balanced_offsets(const SyntheticSpec& spec) { return spec.task == "classification" && spec.outputs <= kReferenceSamples; }

// Unit-norm filters, so each response to standard-normal inputs is itself standard normal.
at::Tensor unit_filters(const std::vector<std::int64_t>& shape, at::Generator& gen) {
  const auto filters = at::randn(shape, gen);
  std::vector<std::int64_t> per_filter(shape.size(), 1);
  per_filter[0] = shape[0];
  return filters / filters.flatten(1).norm(2, {1}).reshape(per_filter);
}

// Images are averaged over k x k cells down to at most 16 x 16 (scaled back to unit variance), so the
// teacher's convolution costs the same for any image size (at full size it took ~9 ms per 224 x 224
// image, minutes for an ImageNet-shaped synthetic set). Whole cells only (a few edge pixels may be
// left out): the cells of standard-normal pixels are then exactly standard normal and independent,
// like the reference set the features are standardised on.
constexpr std::int64_t kMaxCells = 16;
std::int64_t cell_extent(std::int64_t pixels) { return (pixels + kMaxCells - 1) / kMaxCells; }

at::Tensor coarse_images(const at::Tensor& inputs) {  // [n, C, H, W, ...] -> [n, C, h, w]
  auto images = inputs.reshape({inputs.size(0), inputs.size(1), inputs.size(2), -1});
  const std::int64_t kh = cell_extent(images.size(2)), kw = cell_extent(images.size(3));
  if (kh == 1 && kw == 1) return images;
  return at::avg_pool2d(images, {kh, kw}) * std::sqrt(static_cast<double>(kh * kw));
}

// One reference sample as the view sees it: a sequence [T, F] whole, an image [C, H, W...] as its
// [C, h, w] cells; empty for vectors, which the teacher sees as they are.
std::vector<std::int64_t> view_shape(const std::vector<std::int64_t>& shape) {
  if (shape.size() == 2) return shape;
  if (shape.size() < 3) return {};
  std::int64_t width = 1;
  for (std::size_t d = 2; d < shape.size(); ++d) width *= shape[d];
  return {shape[0], shape[1] / cell_extent(shape[1]), width / cell_extent(width)};
}

double product(const std::vector<std::int64_t>& shape) {
  double n = 1;
  for (const auto extent : shape) n *= static_cast<double>(extent);
  return n;
}

}  // namespace

SyntheticMemory synthetic_memory(const SyntheticSpec& spec) {
  const bool classification = spec.task == "classification";
  const auto outputs = static_cast<double>(spec.outputs);
  SyntheticMemory m;
  m.per_sample = 4 * product(spec.shape) + (classification ? 8 : 4 * outputs);
  // The logits; a regression's projection is its targets.
  m.labelling_per_sample = classification ? 4 * outputs : 0;
  const double seen = spec.shape.size() >= 2 ? static_cast<double>(kViewFeatures) : product(spec.shape);
  m.teacher = 4 * seen * outputs;
  // The reference set, and its logits while the class offsets are balanced on them.
  if (spec.shape.size() >= 2) {
    m.reference = 4 * static_cast<double>(kReferenceSamples) * product(view_shape(spec.shape));
    m.teacher += m.reference + (balanced_offsets(spec) ? 4 * static_cast<double>(kReferenceSamples) * outputs : 0);
  }
  return m;
}

SyntheticTeacher::SyntheticTeacher(const SyntheticSpec& spec) : task_(spec.task) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed);
  const auto& shape = spec.shape;
  std::int64_t features = 1;
  for (auto extent : shape) features *= extent;
  std::vector<std::int64_t> reference{kReferenceSamples};  // standard-normal samples as the view sees them
  const auto view = view_shape(shape);
  reference.insert(reference.end(), view.begin(), view.end());
  if (view.size() == 2) {
    filters_ = unit_filters({kViewFeatures, shape[1]}, gen);
  } else if (view.size() == 3) {
    filters_ = unit_filters({kViewFeatures, shape[0], std::min<std::int64_t>(view[1], 3), std::min<std::int64_t>(view[2], 3)}, gen);
  }
  at::Tensor reference_features;
  if (filters_.defined()) {
    // Standardised with the mean and spread measured on a reference set drawn from the seed.
    const auto raw = raw_features(at::randn(reference, gen));
    mean_ = raw.mean(0);
    scale_ = raw.std(0);
    reference_features = (raw - mean_) / scale_;
    features = kViewFeatures;
  }
  map_ = at::randn({features, spec.outputs}, gen) / std::sqrt(static_cast<double>(features));
  offsets_ = at::zeros({spec.outputs});
  if (reference_features.defined() && balanced_offsets(spec)) {
    // The 16 features are correlated (they all grow with an image's local contrast), and argmax over
    // such logits gives a few classes most samples (one-channel images: 3 classes got 95 %).
    // Per-class offsets, adjusted on the reference set until every class gets its share, fix that
    // without changing which features matter (whitening did, and made the task much harder).
    const auto logits = reference_features.mm(map_);
    for (int round = 0; round < 200; ++round) {
      const auto share =
          at::bincount(argmax_less_offsets(logits, offsets_), {}, spec.outputs).to(at::kDouble) / static_cast<double>(kReferenceSamples);
      offsets_ += (share - 1.0 / static_cast<double>(spec.outputs)).to(at::kFloat);
    }
  }
}

at::Tensor SyntheticTeacher::responses(const at::Tensor& inputs) const {  // [n, positions, features]
  if (inputs.dim() == 3) return inputs.matmul(filters_.t());
  return at::conv2d(coarse_images(inputs), filters_).flatten(2).transpose(1, 2);
}

at::Tensor SyntheticTeacher::raw_features(const at::Tensor& inputs, const std::function<void(std::int64_t)>& labelled) const {
  // In chunks of about 64 MiB of responses: a whole image set at once would need 16 feature maps
  // per image.
  const auto positions = responses(inputs.narrow(0, 0, std::min<std::int64_t>(1, inputs.size(0)))).size(1);
  const std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / (positions * kViewFeatures * 4));
  std::vector<at::Tensor> parts;
  for (std::int64_t start = 0; start < inputs.size(0); start += chunk) {
    parts.push_back(responses(inputs.narrow(0, start, std::min(chunk, inputs.size(0) - start))).relu().mean(1));
    if (labelled) labelled(std::min(start + chunk, inputs.size(0)));
  }
  return parts.empty() ? at::zeros({0, kViewFeatures}) : at::cat(parts);
}

at::Tensor SyntheticTeacher::features(const at::Tensor& inputs, const std::function<void(std::int64_t)>& labelled) const {
  if (!filters_.defined()) return inputs.reshape({inputs.size(0), -1});
  return (raw_features(inputs, labelled) - mean_) / scale_;
}

at::Tensor SyntheticTeacher::targets(const at::Tensor& inputs, const std::function<void(std::int64_t)>& labelled) const {
  const auto projected = features(inputs, labelled).matmul(map_);
  return task_ == "classification" ? argmax_less_offsets(projected, offsets_) : projected;
}

namespace {

// Four floats as one value, which GCC and Clang keep in a vector register (SSE2's, x86-64's
// baseline, or NEON's); eight took three times as long where they must be split in two.
using Lanes = float __attribute__((vector_size(16)));
constexpr int kLanes = 4;

// The first index of row - shift's largest value, or of its first NaN, as ATen's argmax gives
// it: one vectorised pass finds the largest value and whether any is NaN, then a scan its place.
// (A plain loop is not vectorised: without -ffast-math a float max reduction is kept in order.)
std::int64_t first_argmax_less(const float* row, const float* shift, std::int64_t n) {
  const float lowest = -std::numeric_limits<float>::infinity();
  Lanes top{lowest, lowest, lowest, lowest}, nan{};
  std::int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    Lanes a, b;
    std::memcpy(&a, row + c, sizeof a);
    std::memcpy(&b, shift + c, sizeof b);
    const Lanes v = a - b;
    top = v > top ? v : top;
    nan = v != v ? v : nan;
  }
  float largest = lowest;
  bool any_nan = false;
  for (int k = 0; k < kLanes; ++k) largest = top[k] > largest ? top[k] : largest, any_nan |= nan[k] != nan[k];
  for (; c < n; ++c) {
    const float v = row[c] - shift[c];
    largest = v > largest ? v : largest, any_nan |= v != v;
  }
  for (c = 0; c < n; ++c) {
    const float v = row[c] - shift[c];
    if (any_nan ? v != v : v == largest) return c;
  }
  return 0;
}

}  // namespace

at::Tensor argmax_less_offsets(const at::Tensor& logits, const at::Tensor& offsets) {
  const auto l = logits.contiguous(), o = offsets.contiguous();
  const std::int64_t rows = l.size(0), classes = l.size(1);
  auto out = at::zeros({rows}, at::kLong);
  if (classes == 0) return out;
  const float *from = l.const_data_ptr<float>(), *shift = o.const_data_ptr<float>();
  auto* best = out.mutable_data_ptr<std::int64_t>();
  // Threads where they pay: a 10-class teacher's 40,960 values take less than starting them.
  const int threads = rows * classes >= (std::int64_t{1} << 20) ? std::max(1, at::get_num_threads()) : 1;
  const std::int64_t parts = std::min<std::int64_t>(rows, 4 * threads), per_part = (rows + parts - 1) / parts;
  core::parallel_tasks(parts, threads, [&](std::int64_t part) {
    for (std::int64_t r = part * per_part; r < std::min(rows, (part + 1) * per_part); ++r)
      best[r] = first_argmax_less(from + r * classes, shift, classes);
  });
  return out;
}

std::uint64_t block_seed(std::uint64_t seed, std::int64_t block) {
  if (block == 0) return seed;
  std::uint64_t z = seed + static_cast<std::uint64_t>(block) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_standard_normal(at::Tensor& out, std::uint64_t seed, const std::function<void(std::int64_t)>& filled) {
  const std::int64_t values = out.numel(), samples = out.size(0);
  if (values == 0) return;
  auto flat = out.view({values});
  const std::int64_t blocks = (values + kNormalBlockValues - 1) / kNormalBlockValues;
  const std::int64_t round = std::max(1, at::get_num_threads());  // one block a thread, then a progress line
  for (std::int64_t first = 0; first < blocks; first += round) {
    const std::int64_t end = std::min(blocks, first + round);
    core::parallel_tasks(end - first, static_cast<int>(round), [&](std::int64_t k) {
      const std::int64_t j = first + k, start = j * kNormalBlockValues;
      auto gen = at::make_generator<at::CPUGeneratorImpl>(block_seed(seed, j));
      flat.narrow(0, start, std::min(kNormalBlockValues, values - start)).normal_(0.0, 1.0, gen);
    });
    if (filled) filled(std::min(values, end * kNormalBlockValues) / (values / samples));
  }
}

// The seeds and the order of the draws are part of the data's definition (bench/train_vs_pytorch.py
// rebuilds the same tensors in Python): the teacher from `seed`, split k's inputs from `seed + 1 + k`
// in blocks (fill_standard_normal).
TensorDataset make_synthetic(const SyntheticSpec& spec, std::int64_t samples, int split, const SyntheticProgress& progress) {
  return make_synthetic(SyntheticTeacher(spec), spec, samples, split, progress);
}

TensorDataset make_synthetic(const SyntheticTeacher& teacher, const SyntheticSpec& spec, std::int64_t samples, int split,
                             const SyntheticProgress& progress) {
  std::vector<std::int64_t> shape{samples};
  shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
  TensorDataset set;
  set.inputs = at::empty(shape, at::kFloat);
  const auto told = [&](const char* doing) {
    return [&progress, doing, samples](std::int64_t done) {
      if (progress) progress(doing, done, samples);
    };
  };
  fill_standard_normal(set.inputs, spec.seed + 1 + static_cast<std::uint64_t>(split), told("generating"));
  set.targets = teacher.targets(set.inputs, told("labelling"));
  return set;
}

}  // namespace gputrain::data
