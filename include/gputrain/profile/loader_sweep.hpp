#pragma once
// `gputrain profile`'s loader sweep: every combination of loader threads, pinned staging,
// prefetch depth and the cache modes that fit, timed on this box and this data, so the user
// pastes the fastest into the config instead of guessing num_workers.

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gputrain/data/dataset.hpp"
#include "gputrain/data/device_cache.hpp"

namespace gputrain::profile {

struct SweepSetting {
  int workers = 0;
  bool pin_memory = false;
  int prefetch = 1;
  data::CacheMode cache = data::CacheMode::none;
};

struct SweepResult {
  SweepSetting setting;
  std::vector<double> batches_per_second;  ///< one figure per timed repeat
  double median_batches_per_second = 0;
  double samples_per_second = 0;
  double megabytes_per_second = 0;  ///< sample bytes delivered to the device per second
  double speedup = 0;               ///< over the first setting (0 threads, no cache)
  /// Caches only: the gather alone (one gather as the cache's feed makes it, gather_rows random
  /// samples, inputs and targets, device synchronised; no sampler, no epoch restarts), in sample
  /// bytes per second / 1e9. 0 otherwise.
  double gather_gbps = 0;
  std::int64_t gather_rows = 0;  ///< samples per gather: the batch times the feed's batches per gather
};

struct SweepOptions {
  std::vector<int> workers;  ///< thread counts to try (worker_counts())
  std::vector<int> prefetch{1, 2, 4};
  std::vector<data::CacheMode> caches;  ///< cache modes that fit, besides streaming (none)
  std::int64_t batch_size = 64;
  int warmup_batches = 3;
  int batches = 30;  ///< timed batches per repeat (fewer when max_seconds runs out)
  int repeats = 3;
  double min_seconds = 0.2;  ///< per repeat: more batches when `batches` take less (microseconds a batch time noise)
  double max_seconds = 2.0;  ///< per repeat
  std::uint64_t seed = 0;
};

/// Settings within this fraction of the fastest median count as fast as it: the first of them in
/// the sweep's order (fewer threads, smaller prefetch, streaming before caches) is the best.
constexpr double kSameSpeed = 0.05;

struct LoaderSweep {
  std::vector<SweepResult> results;                            ///< in the order they ran; results[0] is the baseline
  std::size_t best = 0;                                        ///< the first result within kSameSpeed of the fastest
  std::string device;                                          ///< "cpu" or "cuda:0"
  double pinned_copy_gbps = 0;                                 ///< host-to-device ceiling measured with pinned memory (GPU only)
  double device_copy_gbps = 0;                                 ///< a copy within the GPU's memory, the vram gather's ceiling (GPU only)
  std::int64_t batch_size = 0, samples = 0, sample_bytes = 0;  ///< batch_size: as timed, at most `samples`
  std::int64_t asked_batch_size = 0;                           ///< train.batch_size (64 for auto)
  std::string dataset;                                         ///< its description
};

/// The first of `results` whose samples/s is within kSameSpeed of the fastest; 0 when empty.
std::size_t best_result(const std::vector<SweepResult>& results);

/// 0, 1, 2, 4, 8, ... up to `usable_cores`, and `usable_cores` itself.
std::vector<int> worker_counts(int usable_cores);

/// The host-to-device bandwidth of pinned copies on `device`, in GB/s (median of 5 copies of 256
/// MiB): the ceiling a loader's copies can reach. 0 on the CPU.
double measure_pinned_copy_gbps(c10::Device device);

/// The bandwidth of a copy within `device`'s memory, in GB/s of bytes copied (median of 5 copies
/// of 256 MiB): the ceiling of the vram cache's gather, which reads and writes as much. 0 on the CPU.
double measure_device_copy_gbps(c10::Device device);

/// Runs the sweep; `on_result` is told of each setting as it finishes (progress on long sweeps).
LoaderSweep sweep_loader(const std::shared_ptr<const data::Dataset>& dataset, c10::Device device, const SweepOptions& options,
                         const std::function<void(const SweepResult&, std::size_t done, std::size_t total)>& on_result = {});

/// The config lines that select the best setting.
std::string best_yaml(const LoaderSweep& sweep);
/// A text table, the best row marked, then best_yaml.
std::string sweep_table(const LoaderSweep& sweep);
/// Machine-readable forms: JSON (schema in docs/profiling.md) and CSV (one row per setting).
std::string sweep_json(const LoaderSweep& sweep);
std::string sweep_csv(const LoaderSweep& sweep);
/// An SVG line chart: samples/s by worker count, one line per pinning/prefetch setting.
std::string sweep_svg(const LoaderSweep& sweep);

}  // namespace gputrain::profile
