#include <ATen/ATen.h>

#include <cmath>

#include "gputrain/data/batch.hpp"

namespace gputrain::data {
namespace {

// One random crop per image, gathered in one indexing op: rows[b] = dy[b] + 0..H-1 and
// cols[b] = dx[b] + 0..W-1 pick each image's window out of the padded batch.
at::Tensor random_crop(const at::Tensor& x, std::int64_t pad) {
  const auto n = x.size(0), h = x.size(2), w = x.size(3);
  const auto padded = at::constant_pad_nd(x, {pad, pad, pad, pad}, 0);
  const auto opts = at::TensorOptions().dtype(at::kLong).device(x.device());
  const auto dy = at::randint(0, 2 * pad + 1, {n, 1}, opts), dx = at::randint(0, 2 * pad + 1, {n, 1}, opts);
  const auto rows = (dy + at::arange(h, opts)).view({n, 1, h, 1}).expand({n, x.size(1), h, w + 2 * pad});
  const auto picked_rows = padded.gather(2, rows);  // [n, c, h, w + 2p]
  const auto cols = (dx + at::arange(w, opts)).view({n, 1, 1, w}).expand({n, x.size(1), h, w});
  return picked_rows.gather(3, cols);
}

// `values` as a float tensor on `like`'s device shaped to broadcast along its dimension 1,
// remade only when the device or the rank changes.
const at::Tensor& per_dim1(at::Tensor& cached, const std::vector<double>& values, const at::Tensor& like) {
  if (!cached.defined() || cached.device() != like.device() || cached.dim() != like.dim()) {
    std::vector<std::int64_t> shape(static_cast<std::size_t>(like.dim()), 1);
    shape[1] = static_cast<std::int64_t>(values.size());
    cached = at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(like.device(), at::kFloat).view(shape);
  }
  return cached;
}

}  // namespace

at::Tensor BatchTransform::targets(const at::Tensor& stored) const {
  if (target_mean.empty()) return stored;
  return (stored - per_dim1(target_mean_, target_mean, stored)) / per_dim1(target_std_, target_std, stored);
}

at::Tensor BatchTransform::predictions(const at::Tensor& outputs) const {
  if (target_mean.empty()) return outputs;
  return outputs * per_dim1(target_std_, target_std, outputs) + per_dim1(target_mean_, target_mean, outputs);
}

at::Tensor BatchTransform::apply(const at::Tensor& inputs, bool training) const {
  at::Tensor x = inputs;
  if (x.scalar_type() == at::kByte) {
    x = x.to(at::kFloat).mul_(1.0 / 255.0);
  } else if (x.scalar_type() != at::kFloat) {
    x = x.to(at::kFloat);
  }
  if (!mean.empty()) x = (x - per_dim1(mean_, mean, x)) / per_dim1(std_, std, x);
  if (training && x.dim() == 4) {
    if (crop_padding > 0) x = random_crop(x, crop_padding);
    if (hflip) {
      const auto flip = at::rand({x.size(0), 1, 1, 1}, x.options()).lt(0.5);
      x = at::where(flip, x.flip({3}), x);
    }
  }
  return x;
}

ChannelStats measure_channel_stats(const at::Tensor& inputs) {
  ChannelSums sums;
  sums.add(inputs);
  return sums.stats();
}

void ChannelSums::add(const at::Tensor& inputs) {
  TORCH_CHECK(inputs.dim() >= 2 && inputs.size(0) > 0, "measure_channel_stats needs [N, C, ...] inputs with N > 0");
  const std::int64_t channels = inputs.size(1);
  if (!sum_.defined()) {
    sum_ = at::zeros({channels}, at::kDouble);
    sum_sq_ = at::zeros({channels}, at::kDouble);
  }
  TORCH_CHECK(sum_.size(0) == channels, "ChannelSums: ", channels, " channels after ", sum_.size(0));
  std::vector<std::int64_t> other_dims = {0};
  for (std::int64_t d = 2; d < inputs.dim(); ++d) other_dims.push_back(d);
  const double scale = inputs.scalar_type() == at::kByte ? 1.0 / 255.0 : 1.0;
  constexpr std::int64_t kChunk = 4096;
  for (std::int64_t start = 0; start < inputs.size(0); start += kChunk) {
    const auto x = inputs.slice(0, start, std::min(inputs.size(0), start + kChunk)).to(at::kCPU, at::kDouble).mul_(scale);
    sum_ += x.sum(other_dims);
    sum_sq_ += x.pow(2).sum(other_dims);
  }
  values_per_channel_ += static_cast<double>(inputs.numel() / channels);
  samples_ += inputs.size(0);
}

ChannelStats ChannelSums::stats() const {
  TORCH_CHECK(samples_ > 0, "ChannelSums::stats needs at least one sample");
  ChannelStats stats;
  const auto sums = sum_.contiguous(), squares = sum_sq_.contiguous();  // float64; read here, not by an item() a channel
  const double *sum = sums.const_data_ptr<double>(), *sum_sq = squares.const_data_ptr<double>();
  for (std::int64_t c = 0; c < sums.size(0); ++c) {
    const double mean = sum[c] / values_per_channel_;
    const double variance = std::max(0.0, sum_sq[c] / values_per_channel_ - mean * mean);
    const double std = std::sqrt(variance);
    stats.mean.push_back(mean);
    // Relative to the values' size: float rounding leaves a constant column a tiny nonzero variance.
    const bool constant = std <= 1e-7 * std::max(1.0, std::fabs(mean));
    stats.std.push_back(constant ? 1.0 : std);
    if (constant) stats.constant_channels.push_back(c);
  }
  return stats;
}

}  // namespace gputrain::data
