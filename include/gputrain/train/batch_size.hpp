#pragma once
// `train.batch_size: auto`, `gputrain profile --batch` and `--memory`: real training steps of a
// config's model on its data, measured by the allocator, fed to sizing's memory model and search.
// The probes use a model and optimizer of their own that are thrown away afterwards, so training
// starts exactly as it would with the found batch size written in the config.

#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "gputrain/data/batch.hpp"
#include "gputrain/data/tensor_dataset.hpp"
#include "gputrain/sizing/batch_search.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// What the probe steps train on: real samples of the dataset (train::probe_samples), repeated to
/// make larger batches, prepared as training prepares them.
struct ProbeData {
  const data::TensorDataset& samples;  ///< on the device
  const data::BatchTransform& transform;
  std::int64_t dataset_size = 0;    ///< the batch never exceeds it
  std::uint64_t reserve_bytes = 0;  ///< memory the data cache will take before training
};

/// Called after each probe step (train::probe_progress says them and ends a search on a stop signal).
using ProbeObserver = std::function<void(const sizing::ProbePoint&)>;

/// The memory model of one config on one device (`gputrain profile --memory`).
struct MemoryEstimate {
  sizing::MemoryModel model;  ///< fitted when the search fitted one
  bool fitted = false;
  bool reserved_bytes = false;  ///< fitted to the allocator's reserved bytes (sizing::BatchSearchResult)
  std::vector<sizing::ProbePoint> probes;
  std::int64_t parameter_count = 0;
};

/// Fits the memory model with the probe steps of the batch-size search (3-4 in the usual case:
/// a small one that sizes a large one, then near the largest that fits). No fit when the whole
/// dataset fits in the first probe.
MemoryEstimate estimate_model_memory(const Config& config, c10::Device device, const ProbeData& data, const ProbeObserver& on_probe = {});

/// Peak memory one training step at `batch` adds to what was allocated before it (model,
/// gradients, optimizer state, activations, workspace), from one real step on a throwaway
/// model: what data.cache's plan must leave free. 0 when even that step runs out of memory.
std::uint64_t measure_step_memory(const Config& config, c10::Device device, const ProbeData& data, std::int64_t batch);

/// What `batch_size: auto` settled on.
struct BatchSizeChoice {
  std::int64_t batch = 0;
  sizing::BatchSearchResult search;  ///< empty probes when remembered
  sizing::MemoryBudget budget;
  double seconds = 0;       ///< wall time of the search
  bool remembered = false;  ///< read back from `cache_path` instead of searched
  std::string cache_path;   ///< <logging.dir>/auto_batch.json ("" to skip)
};

/// Searches the micro-batch for `config` on `device` (sizing::search_batch_size over real
/// steps). With a `cache_path`, a result stored there under the same key (GPU model, model and
/// memory-relevant config hash, LibTorch version) is reused, and a new one is stored.
BatchSizeChoice find_batch_size(const Config& config, c10::Device device, const std::string& device_name, const ProbeData& data,
                                const std::string& cache_path, const ProbeObserver& on_probe = {});

/// "8848: peak 20.30 GiB in 71.46 s", or "9000: out of memory": one probe step, as reports list
/// them; on CUDA with the allocator's reserved peak beside it ("peak <allocated> (reserved <reserved>)").
std::string probe_text(const sizing::ProbePoint& probe);

/// The same for machines, as a JSON object's text: batch, fits, peak_bytes, seconds, and on CUDA
/// reserved_peak_bytes. Text, so that the public headers need no JSON library.
std::string probe_json(const sizing::ProbePoint& probe);

/// A ProbeObserver for a search that may take minutes (a large model on the CPU): once it has run
/// `quiet` (a GPU's search takes a second or two, said by its result alone), each probe step is
/// said on `out` (none: nothing is said); a stop signal ends the search (Error, exit 130: no
/// training step has run).
ProbeObserver probe_progress(std::ostream* out, std::chrono::seconds quiet = std::chrono::seconds(5));

/// The true largest batch that fits, by bisection with real steps between `fits` (known to fit)
/// and `upper` (the search's bound): what `gputrain profile --batch --exhaustive` checks the
/// search against. Several more steps than the search; for benchmarks and doubts.
struct ExhaustiveResult {
  std::int64_t largest = 0;
  int steps = 0;
};
ExhaustiveResult find_largest_fitting_batch(const Config& config, c10::Device device, const ProbeData& data, std::int64_t fits,
                                            std::int64_t upper, const ProbeObserver& on_probe = {});

/// When `batch_size: auto`'s micro-batch leaves fewer than 8 steps an epoch over `samples` (a
/// rank's share): the note that says so, with a train.max_batch_size to cap it; "" otherwise.
/// Memory allows such a batch, but an epoch of a handful of huge steps learns little.
std::string few_steps_note(std::int64_t micro_batch, std::int64_t grad_accum, std::int64_t samples, bool drop_last);

/// The search options a config asks for (target fraction, objective, upper bounds).
sizing::BatchSearchOptions batch_search_options(const Config& config, std::int64_t dataset_size);

}  // namespace gputrain::train
