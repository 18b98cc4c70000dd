#pragma once
// The trainer's view of a data-parallel run: which rank this is, the communicator, and the few
// small collectives at step boundaries that keep every rank on the same step (the micro-batch
// after an OOM, a stop request, the global batch size) and make the logged figures global.
// A plain run (no launcher variables) has world size 1 and no communicator: nothing is sent.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/dist/communicator.hpp"
#include "gputrain/dist/rank_environment.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// What all ranks settled on before a step.
struct StepAgreement {
  std::int64_t micro_batch = 0;  ///< the smallest of the ranks' (an OOM on one rank shrinks all)
  bool stop = false;             ///< some rank got SIGINT/SIGTERM: every rank stops before this step
  /// A callback's stop on some rank (train.max_time on its clock, ...): every rank ends the run here.
  /// The largest of the ranks' requests (a StopReason + 1; 0: none), so all take the same reason.
  int end_request = 0;
  std::int64_t rows = 0;          ///< samples in this step over all ranks; 0: every rank is through its shard
  std::int64_t largest_rows = 0;  ///< the most samples one rank holds in this step
};

class RankGroup {
 public:
  /// Reads the launcher's variables (none: a plain single-process run).
  RankGroup();

  /// The device this rank trains on: with launcher variables, `auto` and `cuda` become
  /// cuda:LOCAL_RANK (when GPUs are visible); an explicit cuda:N or cpu is kept.
  std::string device_name(const std::string& configured) const;
  /// Joins the others (a no-op for a plain run). `device` is the one prepare_device chose.
  void connect(const DistributedConfig& config, c10::Device device);

  bool distributed() const { return comm_ != nullptr; }
  int rank() const { return env_ ? env_->rank : 0; }
  int world_size() const { return env_ ? env_->world_size : 1; }
  int local_world_size() const { return env_ ? env_->local_world_size : 1; }
  /// Rank 0 writes logs, metrics, checkpoints and weights; the others only read them.
  bool writer() const { return rank() == 0; }
  dist::Communicator* communicator() { return comm_.get(); }
  /// Steps will replay CUDA graphs holding the gradients' collectives (Communicator::graphs_hold_collectives).
  void graphs_hold_collectives() {
    if (comm_) comm_->graphs_hold_collectives();
  }
  /// "2 ranks over mpi" or "" for a plain run.
  std::string summary() const;

  /// The step-boundary collective (one small all-gather).
  StepAgreement agree(std::int64_t micro_batch, bool stop, int end_request, std::int64_t rows, std::int64_t step);
  /// The time agree() has taken so far: mostly waiting for the slowest rank.
  double agreement_seconds() const { return agreement_seconds_; }
  /// Element-wise sums over ranks of a few host figures (identity for a plain run).
  std::vector<double> sum(std::vector<double> values, const std::string& what);
  /// The smallest of the ranks' values.
  std::int64_t min(std::int64_t value, const std::string& what);

 private:
  std::optional<dist::RankEnvironment> env_;
  std::unique_ptr<dist::Communicator> comm_;
  c10::Device device_{c10::kCPU};
  double agreement_seconds_ = 0;
};

}  // namespace gputrain::train
