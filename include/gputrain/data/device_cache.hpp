#pragma once
// The whole dataset held where the step can reach it without the disk: in GPU memory (`vram`,
// batches gathered on the GPU, no host work per step) or in host memory (`ram`, one gather into
// pinned memory and one asynchronous copy per batch). `data.cache: auto` picks the first that fits.

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gputrain/data/feed.hpp"
#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

/// Where the dataset lives while training: data.cache's values but auto, which resolves to one.
enum class CacheMode { vram, ram, none };
/// The mode as data.cache spells it.
std::string to_string(CacheMode mode);
/// The mode as data.cache spells it, with where that puts the data when it is not where the name
/// says: "vram (in RAM: training on the CPU)".
std::string placement_text(const std::string& mode, bool gpu);

/// What decides where the data can live.
struct CacheFigures {
  std::uint64_t dataset_bytes = 0;      ///< decoded samples in their stored dtype
  std::uint64_t step_bytes = 0;         ///< peak memory of a training step (sizing's memory model)
  std::uint64_t device_free_bytes = 0;  ///< what the training device can still allocate
  std::uint64_t host_free_bytes = 0;    ///< what this process can still allocate in RAM
  bool gpu = false;                     ///< training on a GPU (on the CPU, vram and ram are the same RAM)
  bool in_memory = false;               ///< the samples already are tensors in RAM (array formats)
};

struct CachePlan {
  CacheMode mode = CacheMode::none;
  std::string reason;  ///< "0.35 GiB of data + 2.1 GiB for the step + 0.5 GiB headroom <= 9.6 GiB free"
};

/// Memory kept free beyond data and step: allocator fragmentation, library workspaces.
std::uint64_t cache_headroom(std::uint64_t free_bytes);

/// The most bytes the vram feed on a GPU gathers with one launch. Several batches per gather mean
/// the host pays its launches once per chunk instead of once per batch, and the GPU gathers enough
/// rows per kernel to run near its memory bandwidth (one batch of a small model is a few
/// microseconds of copying behind a fixed launch cost).
inline constexpr std::uint64_t kGatherChunkBytes = 32ull << 20;

/// The chunk the vram feed gathers for a dataset of `dataset_bytes` on a GPU: kGatherChunkBytes,
/// but at most an eighth of the dataset, so a small cache does not grow by half. The feed holds one
/// chunk besides the dataset during training: batch_size auto's probes reserve it too.
std::uint64_t gather_chunk_bytes(std::uint64_t dataset_bytes);

/// How many batches of `batch_bytes` fit one chunk of `chunk_bytes`: between 1 and 64.
std::int64_t batches_per_gather(std::uint64_t batch_bytes, std::uint64_t chunk_bytes);

/// `requested` is auto, vram, ram or none. auto: vram when data + step + headroom fit the device,
/// else ram when the data fits the host, else none (stream from the files). An explicit vram or
/// ram that does not fit is a UsageError with the figures and what to set instead.
CachePlan plan_cache(const std::string& requested, const CacheFigures& figures);

class DeviceCache {
 public:
  /// Moves `cpu_set` to `device` (vram), or keeps it in RAM as it is (ram on a GPU; a memory-mapped
  /// file is read in once, but nothing is copied again or pinned: each batch is gathered into pinned
  /// memory). On the CPU both are the in-memory cache.
  DeviceCache(TensorDataset cpu_set, CacheMode mode, c10::Device device);
  /// vram or ram: on the CPU always vram, the in-memory cache being the device's.
  CacheMode mode() const { return mode_; }
  /// Bytes the cached inputs and targets take.
  std::uint64_t bytes() const;
  /// The samples `indices` (int64, any device) as a batch on the training device.
  Batch gather(const at::Tensor& indices) const;
  /// A Feed over this cache; the cache must outlive it. It gathers `batches_per_gather` batches at
  /// a time in vram mode (0: the figure above for this cache's device and row size) and hands them
  /// out as views; the batches are the same whatever the figure.
  std::unique_ptr<Feed> feed(std::int64_t batches_per_gather = 0) const;
  /// Bytes of one sample's inputs and target.
  std::uint64_t sample_bytes() const;
  /// How many batches of `batch_size` its feed gathers at once by default: a gather_chunk_bytes()
  /// chunk's worth for a vram cache on a GPU; else 1 (the gather is host work either way, and a
  /// batch fresh from it is still in the CPU's cache).
  std::int64_t batches_per_gather(std::int64_t batch_size) const;
  const TensorDataset& data() const { return set_; }

 private:
  TensorDataset set_;
  CacheMode mode_;
  c10::Device device_;
};

}  // namespace gputrain::data
