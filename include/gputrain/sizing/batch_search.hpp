#pragma once
// sizing::search_batch_size: the largest micro-batch that fits, in a few probe steps. Probe a
// small batch, then one sized from it, fit MemoryModel through both, predict the largest batch
// under the target fraction, confirm it with one real step (backing off on OOM), round down to
// a multiple of 8. The probe itself is the caller's (train runs a real training step), so this
// search has no model, optimizer or device of its own and is tested with synthetic probes.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/sizing/memory_model.hpp"

namespace gputrain::sizing {

struct BatchSearchOptions {
  double target_fraction = 0.90;  ///< of the memory left after the fixed part (sizing.target_fraction)
  std::int64_t max_batch = 1;     ///< never above this: the dataset size, train.max_batch_size
  std::string max_batch_reason;   ///< what sets max_batch, for the report
  std::int64_t multiple = 8;      ///< round down to a multiple of this (batches >= it)
  bool throughput = false;        ///< sizing.objective: throughput
  std::int64_t first_batch = 16;  ///< the first probe (smaller when max_batch is)
  int max_probes = 10;            ///< memory probes, a bound for unusual memory curves (reserved-byte staircases)
};

/// Memory known before the search: what it is measured against.
struct MemoryBudget {
  StaticMemory known;
  std::uint64_t resident = 0;  ///< allocated before the first probe
  std::uint64_t limit = 0;
  std::string limit_source;
};

struct BatchSearchResult {
  std::int64_t batch = 0;            ///< the micro-batch to train with
  std::int64_t memory_batch = 0;     ///< what memory alone allows (= batch unless throughput chose)
  std::vector<ProbePoint> probes;    ///< every step run, in order
  int memory_probes = 0;             ///< steps spent on the memory search (the rest timed throughput)
  std::optional<MemoryModel> model;  ///< when two probes of different size fitted
  bool reserved_bytes = false;       ///< the model fits reserved bytes (CUDA, after an out-of-memory probe)
  std::string reason;                ///< one line: why this batch
};

/// Runs the search. `probe(batch)` runs one real step and reports whether it fitted, its peak
/// and its time. Throws gputrain::Error (exit 1) when even a batch of 1 does not fit.
BatchSearchResult search_batch_size(const std::function<ProbePoint(std::int64_t batch)>& probe, const MemoryBudget& budget,
                                    const BatchSearchOptions& options);

/// Rounds down to a multiple of `multiple` when batch >= multiple (never below 1).
std::int64_t round_batch(std::int64_t batch, std::int64_t multiple);

}  // namespace gputrain::sizing
