#pragma once
// Where a training or validation loop gets its batches: a Loader reading the files with worker
// threads, or a DeviceCache holding the whole set. The loop does not care which.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/data/batch.hpp"

namespace gputrain::data {

/// A batch and how many positions of the epoch's order it covers (more than its rows when
/// unreadable samples were skipped).
struct FedBatch {
  Batch batch;
  std::int64_t covered = 0;
};

class Feed {
 public:
  virtual ~Feed() = default;
  /// Starts (or restarts) a pass over `order` (int64 CPU indices; a resumed epoch passes only what
  /// is left of it) in batches of `batch_size`; the last one may be smaller.
  virtual void start(const at::Tensor& order, std::int64_t batch_size) = 0;
  /// The next batch on the training device, or nullopt when the pass is done.
  virtual std::optional<FedBatch> next() = 0;
  /// Samples skipped so far because they could not be read, as "origin: why", each listed once.
  virtual std::vector<std::string> skipped() const { return {}; }
};

}  // namespace gputrain::data
