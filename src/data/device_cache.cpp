#include "gputrain/data/device_cache.hpp"

#include <ATen/ATen.h>

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <utility>

#include "chunked_upload.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "row_gather.hpp"

namespace gputrain::data {
namespace {

std::string gib(std::uint64_t bytes) { return core::format_bytes(bytes); }

// `n` rows shaped and typed like those of `rows`, not yet written.
at::Tensor empty_rows(const at::Tensor& rows, std::int64_t n, const at::TensorOptions& options) {
  auto shape = rows.sizes().vec();
  shape[0] = n;
  return at::empty(shape, options.dtype(rows.scalar_type()));
}

// One table of row_gather's kernel: `rows` gathered into `out`, as the widest word both allow.
row_gather::Table gather_table(const at::Tensor& rows, at::Tensor& out) {
  const std::int64_t n = rows.size(0);
  const std::int64_t row_bytes = n > 0 ? rows.numel() / n * static_cast<std::int64_t>(rows.element_size()) : 0;
  return row_gather::table_for(rows.data_ptr(), out.data_ptr(), n, row_bytes);
}

// `set`'s rows `indices` (on the set's GPU, int64, contiguous) into `out`, inputs and targets by one
// launch of row_gather's kernel on the current stream (where the step that reads them runs).
void gather_on_gpu(const TensorDataset& set, const at::Tensor& indices, Batch& out) {
  const row_gather::Table tables[] = {gather_table(set.inputs, out.inputs), gather_table(set.targets, out.targets)};
  const c10::cuda::CUDAGuard on_device(set.inputs.device());
  const auto stream = c10::cuda::getCurrentCUDAStream(set.inputs.device().index());
  if (const char* error = row_gather::gather_rows_on_gpu(tables, 2, indices.data_ptr<std::int64_t>(), indices.size(0), stream.stream()))
    throw Error("the VRAM cache's gather kernel did not start on " + set.inputs.device().str() + ": " + error,
                "set data.cache: ram (the rows are then gathered on the host); `gputrain verify` tries the kernel on each GPU");
}

// A ram cache's table: the rows where the source holds them in RAM. Each batch is gathered into
// pinned memory (DeviceCache::gather), so a pinned copy of the table would only hold it twice (the
// host allocator rounds a pinned block up to a power of two). Rows in memory no allocator gave (a
// memory-mapped file, wrapped by from_blob) are read in once, so that no batch waits on the disk.
at::Tensor in_ram(const at::Tensor& rows) {
  return rows.storage().allocator() == nullptr ? rows.clone(at::MemoryFormat::Contiguous) : rows;
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
    case CacheMode::vram:
      return "vram";
    case CacheMode::ram:
      return "ram";
    case CacheMode::none:
      return "none";
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
  const std::string device_sum = gib(f.dataset_bytes) + " of data + " + gib(f.step_bytes) + " for the training step + " + gib(headroom) +
                                 " headroom " + (fits_device ? "<= " : "> ") + gib(f.device_free_bytes) + " free " + where;
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
                       "set data.cache: auto (it falls back to RAM or streaming), a smaller train.batch_size, or fewer samples");
    return {CacheMode::vram, device_sum};
  }
  if (requested == "ram") {
    if (!fits_host)
      throw UsageError("data.cache: ram, but the dataset does not fit: " + host_sum,
                       "set data.cache: none (stream from the files) or auto");
    return {f.gpu ? CacheMode::ram : CacheMode::vram, host_sum};
  }
  if (fits_device) return {CacheMode::vram, device_sum};
  if (f.gpu && fits_host) return {CacheMode::ram, "not in GPU memory (" + device_sum + "); RAM: " + host_sum};
  return {CacheMode::none, "too large to cache (" + (f.gpu ? device_sum + "; " : std::string()) + host_sum + "): streaming from the files"};
}

DeviceCache::DeviceCache(TensorDataset cpu_set, CacheMode mode, c10::Device device) : mode_(mode), device_(device) {
  // Each host array is let go once it is copied: the callers move the table in, so it is not held twice.
  if (mode == CacheMode::vram || !device.is_cuda()) {
    set_.inputs = upload_in_chunks(std::exchange(cpu_set.inputs, {}), device);
    set_.targets = upload_in_chunks(std::exchange(cpu_set.targets, {}), device);
    mode_ = CacheMode::vram;  // on the CPU, the in-memory cache is the device cache
    // Waits for the copy, so that the load time the caller reports is the load's, not the first batch's.
    if (device.is_cuda()) (void)set_.targets.sum().item<double>();
  } else {
    set_.inputs = in_ram(std::exchange(cpu_set.inputs, {}));
    set_.targets = in_ram(std::exchange(cpu_set.targets, {}));
  }
}

std::uint64_t DeviceCache::bytes() const { return set_.inputs.nbytes() + set_.targets.nbytes(); }

Batch DeviceCache::gather(const at::Tensor& indices) const {
  // vram on a GPU: gathered there, by gputrain's kernel where the rows are contiguous (a caller's
  // strided tensors go through index_select; gputrain's sources make contiguous ones). vram on the
  // CPU: from the RAM it lives in (index_select copies whole rows there). ram on a GPU: into pinned
  // memory (the caching host allocator reuses it once the copy that read it has finished), then
  // one asynchronous copy each.
  const bool on_gpu = mode_ == CacheMode::vram && set_.inputs.is_cuda();
  const auto idx = indices.to(on_gpu ? set_.inputs.device() : c10::Device(c10::kCPU), at::kLong).contiguous();
  const auto options = on_gpu ? set_.inputs.options() : at::TensorOptions().pinned_memory(mode_ == CacheMode::ram);
  Batch out{empty_rows(set_.inputs, idx.size(0), options), empty_rows(set_.targets, idx.size(0), options)};
  if (on_gpu && set_.inputs.is_contiguous() && set_.targets.is_contiguous()) {
    gather_on_gpu(set_, idx, out);
  } else {
    at::index_select_out(out.inputs, set_.inputs, 0, idx);
    at::index_select_out(out.targets, set_.targets, 0, idx);
  }
  if (mode_ == CacheMode::vram) return out;
  return {out.inputs.to(device_, /*non_blocking=*/true), out.targets.to(device_, /*non_blocking=*/true)};
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
