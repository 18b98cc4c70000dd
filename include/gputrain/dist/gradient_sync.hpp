#pragma once
// dist::GradientSync: our DDP (LibTorch's C++ API has none). Gradients are summed across ranks in
// buckets, as PyTorch DDP does: parameters in reverse registration order (roughly the order
// backward produces their gradients), a small first bucket so communication starts early, the rest
// up to the bucket cap. A post-accumulate hook on each parameter marks its gradient ready; a full
// bucket takes its gradients in one multi-tensor copy (each laid out as its parameter is) and its
// all-reduce starts at once, in bucket order on every rank, while backward computes the next ones.
// finish() starts what is left, waits, and makes each sum its parameter's .grad() in place.
// Over NCCL a CUDA-graph step (train/step/graph_step.cpp) records the all-reduces its captured
// backward's hooks start and finish()'s wait; its replays run them without this host code.
//
// The loss of each rank's share is weighted by its share of the global batch (see
// train::StepBackend::accumulate), so a plain sum gives the global batch's gradient even when ranks
// hold different numbers of samples (the last batch of an epoch).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::dist {

class Communicator;

struct GradientSyncOptions {
  std::int64_t bucket_bytes = 25ll << 20;       ///< PyTorch DDP's bucket_cap_mb default
  std::int64_t first_bucket_bytes = 1ll << 20;  ///< small, so the first all-reduce starts early
  std::optional<c10::ScalarType> wire_dtype;    ///< bf16/fp16: compress the all-reduce; nullopt: the gradients' own
};

/// What the synchronisation cost, for the benchmark and the logs.
struct SyncFigures {
  std::int64_t steps = 0;
  std::int64_t buckets = 0;                     ///< per step
  std::int64_t bytes_per_step = 0;              ///< sent by the all-reduces, on the wire
  std::int64_t launched_in_backward = 0;        ///< buckets started while backward ran (overlapped), all steps
  double wait_seconds = 0;                      ///< time finish() waited for the all-reduces (exposed communication)
  std::optional<double> communication_seconds;  ///< the all-reduces' own time, when the engine can tell (MPI)
  /// The share of the all-reduces' time hidden behind backward, when known.
  std::optional<double> hidden_share() const;
};

class GradientSync {
 public:
  /// `parameters` in registration order (model.parameters()); the ones that require gradients are
  /// synchronised. Registers the hooks; `communicator` must outlive this object.
  GradientSync(const std::vector<at::Tensor>& parameters, Communicator& communicator, GradientSyncOptions options = {});
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  /// Starts a step: `step` names the all-reduces in errors. Hooks stay quiet until arm().
  void begin_step(std::int64_t step);
  /// The next backward is the step's last (its gradients are final): its hooks start buckets.
  /// With gradient accumulation, earlier micro-batches' backwards communicate nothing.
  void arm();
  /// `parameter`'s gradient of this backward is in its .grad(): what the hooks say when autograd
  /// ran the backward, for a backward whose gradients autograd's hooks do not see. Quiet until arm().
  void gradient_ready(const at::Tensor& parameter);
  /// Starts the buckets not started yet (zeros for parameters without a gradient, e.g. a rank
  /// with no samples in this step, or layers the forward skipped), waits for every all-reduce and
  /// puts the sums in each parameter's .grad().
  void finish();
  /// Drops the step's partial work after an out-of-memory error, so the step can run again.
  /// Throws when a bucket of this step was already sent: the other ranks have it, and sending
  /// it again would pair it with the wrong collective.
  void discard();

  /// Bucket sizes in parameters, first bucket first (tests and logs).
  std::vector<std::int64_t> bucket_parameter_counts() const;
  /// The bucket `parameter`'s gradient goes out in (0: the first sent); -1 for a tensor not synchronised.
  std::int64_t bucket_of(const at::Tensor& parameter) const;
  /// What the synchronisation has cost so far.
  SyncFigures figures() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Copies rank 0's parameters and buffers to every rank, so all start from the same model.
void broadcast_from_rank0(Communicator& communicator, const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& buffers);

}  // namespace gputrain::dist
