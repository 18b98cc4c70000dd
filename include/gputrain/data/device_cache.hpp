#pragma once
// The whole dataset held where the step can reach it without the disk: in GPU memory (`vram`,
// batches gathered on the GPU, no host work per step) or in pinned host memory (`ram`, one
// gather and one asynchronous copy per batch). `data.cache: auto` picks the first that fits.

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gputrain/data/feed.hpp"
#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

enum class CacheMode { vram, ram, none };
std::string to_string(CacheMode mode);

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

/// `requested` is auto, vram, ram or none. auto: vram when data + step + headroom fit the device,
/// else ram when the data fits the host, else none (stream from the files). An explicit vram or
/// ram that does not fit is a UsageError with the figures and what to set instead.
CachePlan plan_cache(const std::string& requested, const CacheFigures& figures);

class DeviceCache {
 public:
  /// Moves `cpu_set` to `device` (vram) or pins it in host memory (ram; plain RAM on the CPU).
  DeviceCache(TensorDataset cpu_set, CacheMode mode, c10::Device device);
  CacheMode mode() const { return mode_; }
  std::uint64_t bytes() const;
  double load_seconds() const { return load_seconds_; }
  /// The samples `indices` (int64, any device) as a batch on the training device.
  Batch gather(const at::Tensor& indices) const;
  /// A Feed over this cache; the cache must outlive it.
  std::unique_ptr<Feed> feed() const;
  const TensorDataset& data() const { return set_; }

 private:
  TensorDataset set_;
  CacheMode mode_;
  c10::Device device_;
  double load_seconds_ = 0;
};

}  // namespace gputrain::data
