#include "gputrain/data/device_cache.hpp"

#include <ATen/ATen.h>

#include <algorithm>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data {
namespace {

std::string gib(std::uint64_t bytes) { return core::format_bytes(bytes); }

// index_select on a GPU moves one element per thread, so a uint8 image row goes byte by byte, far
// below what the memory can deliver. Viewed as the widest word that divides the row (8, 4 or 2
// bytes) the same row moves in a fraction of the loads; the bits are copied unchanged, whatever the
// dtype. The word must also align with every tensor involved. The host's index_select already
// copies whole rows, so there the view gains nothing (docs/benchmarks.md); the host keeps the same
// path so that the CPU tests check the one the GPU takes.
at::ScalarType row_word(const at::Tensor& rows, std::initializer_list<at::Tensor> involved) {
  const std::int64_t n = rows.size(0);
  const auto item = static_cast<std::int64_t>(rows.element_size());
  const std::int64_t row_bytes = n > 0 ? rows.numel() / n * item : 0;
  for (const auto word : {at::kLong, at::kInt, at::kShort}) {
    const auto width = static_cast<std::int64_t>(c10::elementSize(word));
    if (width <= item || row_bytes == 0) break;
    if (row_bytes % width != 0) continue;
    const bool aligned = std::all_of(involved.begin(), involved.end(), [&](const at::Tensor& t) {
      return t.is_contiguous() && reinterpret_cast<std::uintptr_t>(t.data_ptr()) % static_cast<std::uintptr_t>(width) == 0;
    });
    if (aligned) return word;
  }
  return rows.scalar_type();
}

// [n, ...] rows as [n, row_bytes / word size] words (a view: nothing is copied).
at::Tensor as_words(const at::Tensor& rows, at::ScalarType word) { return rows.view({rows.size(0), -1}).view(word); }

// The rows `indices` of `rows` into `out` (the same row shape and dtype, indices.size(0) rows).
void gather_rows_into(at::Tensor& out, const at::Tensor& rows, const at::Tensor& indices) {
  const auto word = out.size(0) > 0 ? row_word(rows, {rows, out}) : rows.scalar_type();
  if (word == rows.scalar_type()) {
    at::index_select_out(out, rows, 0, indices);
  } else {
    auto out_words = as_words(out, word);
    at::index_select_out(out_words, as_words(rows, word), 0, indices);
  }
}

at::Tensor gather_rows(const at::Tensor& rows, const at::Tensor& indices) {
  auto shape = rows.sizes().vec();
  shape[0] = indices.size(0);
  auto out = at::empty(shape, rows.options());
  gather_rows_into(out, rows, indices);
  return out;
}

class CacheFeed final : public Feed {
 public:
  CacheFeed(const DeviceCache& cache, std::int64_t batches_per_gather) : cache_(cache), requested_per_gather_(batches_per_gather) {}
  void start(const at::Tensor& order, std::int64_t batch_size) override {
    const bool on_gpu = cache_.mode() == CacheMode::vram && cache_.data().inputs.is_cuda();
    // vram: the order lives on the GPU too, so a step's gather needs no copy from the host. From
    // pinned memory the copy is queued behind the steps already launched instead of waiting for them.
    order_ = on_gpu ? (order.is_cpu() ? order.pin_memory() : order).to(cache_.data().inputs.device(), /*non_blocking=*/true) : order;
    batch_ = batch_size;
    per_gather_ = requested_per_gather_ > 0 ? requested_per_gather_ : cache_.batches_per_gather(batch_size);
    position_ = chunk_start_ = chunk_end_ = 0;
    chunk_ = {};
  }
  std::optional<FedBatch> next() override {
    const std::int64_t n = order_.defined() ? order_.size(0) : 0;
    if (position_ >= n) return std::nullopt;
    if (position_ >= chunk_end_) {  // the next chunk of whole batches, gathered at once
      chunk_start_ = position_;
      chunk_end_ = std::min(n, position_ + batch_ * per_gather_);
      chunk_ = cache_.gather(order_.slice(0, chunk_start_, chunk_end_));
    }
    const std::int64_t end = std::min(chunk_end_, position_ + batch_);
    const std::int64_t from = position_ - chunk_start_, to = end - chunk_start_;
    FedBatch fed{{chunk_.inputs.slice(0, from, to), chunk_.targets.slice(0, from, to)}, end - position_};
    position_ = end;
    // Its last batch handed out, the chunk is the caller's to free: one chunk in memory at the next
    // gather, not two, and none held when a failed step or the end of a pass drops the batch.
    if (position_ >= chunk_end_) chunk_ = {};
    return fed;
  }

 private:
  const DeviceCache& cache_;
  const std::int64_t requested_per_gather_;
  std::int64_t per_gather_ = 1;
  at::Tensor order_;
  Batch chunk_;
  std::int64_t batch_ = 1, position_ = 0, chunk_start_ = 0, chunk_end_ = 0;
};

}  // namespace

std::string to_string(CacheMode mode) {
  switch (mode) {
    case CacheMode::vram: return "vram";
    case CacheMode::ram: return "ram";
    case CacheMode::none: return "none";
  }
  return "none";
}

std::string placement_text(const std::string& mode, bool gpu) {
  return mode == "vram" && !gpu ? mode + " (in RAM: training on the CPU)" : mode;
}

std::uint64_t gather_chunk_bytes(std::uint64_t dataset_bytes) { return std::min(kGatherChunkBytes, dataset_bytes / 8); }

std::int64_t batches_per_gather(std::uint64_t batch_bytes, std::uint64_t chunk_bytes) {
  if (batch_bytes == 0) return 1;
  return static_cast<std::int64_t>(std::clamp<std::uint64_t>(chunk_bytes / batch_bytes, 1, 64));
}

std::uint64_t cache_headroom(std::uint64_t free_bytes) { return std::max<std::uint64_t>(256 * core::kMiB, free_bytes / 20); }

CachePlan plan_cache(const std::string& requested, const CacheFigures& f) {
  const std::string where = f.gpu ? "GPU memory" : "RAM";
  const std::uint64_t headroom = cache_headroom(f.device_free_bytes);
  const std::uint64_t device_need = f.dataset_bytes + f.step_bytes + headroom;
  const bool fits_device = device_need <= f.device_free_bytes;
  const std::string device_sum = gib(f.dataset_bytes) + " of data + " + gib(f.step_bytes) + " for the training step + " +
                                 gib(headroom) + " headroom " + (fits_device ? "<= " : "> ") + gib(f.device_free_bytes) +
                                 " free " + where;
  const std::uint64_t host_headroom = cache_headroom(f.host_free_bytes);
  const bool fits_host = f.dataset_bytes + host_headroom <= f.host_free_bytes;
  const std::string host_sum = gib(f.dataset_bytes) + " of data + " + gib(host_headroom) + " headroom " + (fits_host ? "<= " : "> ") +
                               gib(f.host_free_bytes) + " free RAM";
  if (requested == "none") return {CacheMode::none, "data.cache: none (streaming from the files)"};
  if (!f.gpu && f.in_memory && requested != "none")
    return {CacheMode::vram, "the arrays already are in memory: batches are gathered from them directly"};
  if (requested == "vram") {
    if (!fits_device)
      throw UsageError("data.cache: vram, but the dataset does not fit: " + device_sum,
                       "set data.cache: auto (it falls back to pinned RAM or streaming), a smaller train.batch_size, or fewer samples");
    return {CacheMode::vram, device_sum};
  }
  if (requested == "ram") {
    if (!fits_host) throw UsageError("data.cache: ram, but the dataset does not fit: " + host_sum, "set data.cache: none (stream from the files) or auto");
    return {f.gpu ? CacheMode::ram : CacheMode::vram, host_sum};
  }
  if (fits_device) return {CacheMode::vram, device_sum};
  if (f.gpu && fits_host) return {CacheMode::ram, "not in GPU memory (" + device_sum + "); pinned RAM: " + host_sum};
  return {CacheMode::none, "too large to cache (" + (f.gpu ? device_sum + "; " : std::string()) + host_sum + "): streaming from the files"};
}

DeviceCache::DeviceCache(TensorDataset cpu_set, CacheMode mode, c10::Device device) : mode_(mode), device_(device) {
  if (mode == CacheMode::vram || !device.is_cuda()) {
    set_ = {cpu_set.inputs.to(device), cpu_set.targets.to(device)};
    mode_ = CacheMode::vram;  // on the CPU, the in-memory cache is the device cache
  } else {
    set_ = {cpu_set.inputs.pin_memory(), cpu_set.targets.pin_memory()};
  }
  // Waits for the copy, so that the load time the caller reports is the load's, not the first batch's.
  if (device.is_cuda()) (void)set_.targets.sum().item<double>();
}

std::uint64_t DeviceCache::bytes() const { return set_.inputs.nbytes() + set_.targets.nbytes(); }

Batch DeviceCache::gather(const at::Tensor& indices) const {
  if (mode_ == CacheMode::vram) {
    const auto idx = indices.device() == set_.inputs.device() ? indices : indices.to(set_.inputs.device());
    return {gather_rows(set_.inputs, idx), gather_rows(set_.targets, idx)};
  }
  // ram on a GPU: gather into pinned memory (the caching host allocator reuses it once the copy
  // that read it has finished), then one asynchronous copy each.
  const auto idx = indices.to(at::kCPU);
  const auto pinned = at::TensorOptions().pinned_memory(true);
  std::vector<std::int64_t> shape = set_.inputs.sizes().vec(), tshape = set_.targets.sizes().vec();
  shape[0] = tshape[0] = idx.size(0);
  auto inputs = at::empty(shape, pinned.dtype(set_.inputs.scalar_type()));
  auto targets = at::empty(tshape, pinned.dtype(set_.targets.scalar_type()));
  gather_rows_into(inputs, set_.inputs, idx);
  gather_rows_into(targets, set_.targets, idx);
  return {inputs.to(device_, /*non_blocking=*/true), targets.to(device_, /*non_blocking=*/true)};
}

std::uint64_t DeviceCache::sample_bytes() const {
  const auto n = set_.size();
  return n > 0 ? bytes() / static_cast<std::uint64_t>(n) : 0;
}

std::int64_t DeviceCache::batches_per_gather(std::int64_t batch_size) const {
  if (mode_ != CacheMode::vram || !set_.inputs.is_cuda()) return 1;
  return data::batches_per_gather(static_cast<std::uint64_t>(std::max<std::int64_t>(batch_size, 0)) * sample_bytes(),
                                  gather_chunk_bytes(bytes()));
}

std::unique_ptr<Feed> DeviceCache::feed(std::int64_t batches_per_gather) const {
  return std::make_unique<CacheFeed>(*this, batches_per_gather);
}

}  // namespace gputrain::data
