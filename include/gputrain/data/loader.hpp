#pragma once
// The threaded loader: worker threads read samples straight into a ring of host buffers
// allocated once (pinned on a GPU), batches go to the GPU on a side CUDA stream and the step's
// stream waits on an event, so the copy of batch k+1 overlaps the compute of batch k. Threads,
// not processes: no pickling, no /dev/shm, and the workers live as long as the loader.

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "gputrain/data/dataset.hpp"
#include "gputrain/data/feed.hpp"

namespace gputrain::data {

struct LoaderOptions {
  int workers = 2;                ///< 0: the training thread reads each batch itself
  int prefetch = 2;               ///< batches in flight per worker
  bool pin_memory = true;         ///< page-locked staging buffers (GPU only: faster, truly async copies)
  double timeout_seconds = 120;   ///< a batch not ready after this long is an error naming it
  c10::Device device{c10::kCPU};  ///< where batches are delivered
};

class Loader final : public Feed {
 public:
  /// Batches hold at most `max_batch` samples (the staging buffers' size).
  Loader(std::shared_ptr<const Dataset> dataset, std::int64_t max_batch, LoaderOptions options);
  ~Loader() override;
  void start(const at::Tensor& order, std::int64_t batch_size) override;
  /// Rethrows a worker's error as an Error naming the sample and its file; throws when a batch
  /// takes longer than the timeout.
  std::optional<FedBatch> next() override;
  std::vector<std::string> skipped() const override;
  /// Bytes of host staging memory (fixed for the loader's life).
  std::uint64_t staging_bytes() const;
  /// The staging buffers a loader with `options` holds (one, or workers x prefetch) and the
  /// bytes of each, for batches of `max_batch` samples of `layout`: known before it allocates.
  static std::pair<std::size_t, std::uint64_t> staging_for(const SampleLayout& layout, std::int64_t max_batch,
                                                           const LoaderOptions& options);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputrain::data
