#pragma once
// model.sync_batch_norm: the ranks' exchange of batch-norm statistics (BatchNormSync) and the
// set-up that attaches it to a model's syncable layers. The layers are in
// gputrain/train/sync_batch_norm.hpp; the math, PyTorch SyncBatchNorm's, in sync_batch_norm.cpp.
//
// Every rank must exchange the same statistics in the same order, so every rank runs the same
// number of forward passes in a step: one whose share is smaller (or empty) joins the others'
// extra passes with empty micro-batches (StepBackend::accumulate reads forwards()).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gputrain/train/sync_batch_norm.hpp"

namespace torch::nn {
class Module;
}

namespace gputrain::dist {
class Communicator;
}

namespace gputrain::train {

class BatchNormSync {
 public:
  /// `communicator` must outlive this object.
  explicit BatchNormSync(dist::Communicator& communicator);

  /// Step `step` (0-based, for errors) starts; every rank runs `forwards` forward passes in it.
  void begin_step(std::int64_t step, std::int64_t forwards);
  std::int64_t forwards() const { return forwards_; }

  /// Each rank's `row` (the same shape everywhere), stacked in rank order: [world, row...].
  at::Tensor gather(const at::Tensor& row, const std::string& what);
  /// Sums `tensor` over the ranks in place.
  void sum(at::Tensor& tensor, const std::string& what);
  /// After an out-of-memory error: the step can run again only if no statistics went out yet
  /// (the other ranks would pair the repeat with their next exchange). Throws Error otherwise.
  void discard();

 private:
  std::string in_step(const std::string& what) const;
  dist::Communicator& communicator_;
  std::int64_t step_ = 0, forwards_ = 1, exchanged_ = 0;
};

/// Batch-norm layers of a C++ module by kind: those that can synchronise, and the plain
/// torch::nn ones that cannot (their names).
struct BatchNormCensus {
  std::int64_t syncable = 0;
  std::vector<std::string> plain;
};
BatchNormCensus count_batch_norms(torch::nn::Module& root);

/// Attaches `sync` to every syncable batch-norm layer under `root` (nullptr detaches); returns
/// how many.
std::int64_t attach_batch_norm_sync(torch::nn::Module& root, const std::shared_ptr<BatchNormSync>& sync);

}  // namespace gputrain::train
