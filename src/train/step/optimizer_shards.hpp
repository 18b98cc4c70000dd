#pragma once
// distributed.shard_optimizer: ZeRO stage 1, as PyTorch's ZeroRedundancyOptimizer does it. Each rank
// owns about 1/N of the parameters (by size) and keeps and steps the optimizer state of those
// only. Gradients are all-reduced as in any distributed run (GradientSync, overlapped with
// backward), so clipping and the loss scaler see them all; after the step each owner broadcasts
// the parameters it updated. A checkpoint gathers the state onto rank 0, one parameter at a time
// and onto the CPU, so the file is an unsharded run's and resumes on any number of ranks.

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace gputrain::dist {
class Communicator;
}

namespace gputrain::train {

/// Which rank owns each parameter, given their sizes in elements: largest first, each to the rank
/// that owns the fewest elements so far (the lower rank on a tie), so the shares differ by at most
/// one parameter's size. Deterministic: every rank computes the same.
std::vector<int> shard_owners(const std::vector<std::int64_t>& numels, int world);

/// The parameters of `optimizer` (in its order: group by group) that `rank` of `world` owns.
std::vector<at::Tensor> own_parameters(torch::optim::Optimizer& optimizer, int rank, int world);

/// Bytes of optimizer state `optimizer` holds (momentum buffers, Adam's moments).
std::int64_t optimizer_state_bytes(torch::optim::Optimizer& optimizer);

class OptimizerShards {
 public:
  /// Splits `optimizer`'s parameters among the ranks and makes it step this rank's only (it must
  /// be one of make_optimizer's). Broadcasts pack small parameters into messages of up to
  /// `message_bytes`. `communicator` must outlive this object.
  OptimizerShards(torch::optim::Optimizer& optimizer, dist::Communicator& communicator, std::int64_t message_bytes);

  /// After each optimizer step: every rank receives the parameters the others updated. `step`
  /// names the broadcasts in errors.
  void share_updates(std::int64_t step);
  /// Before a checkpoint, on every rank (a collective): rank 0's optimizer gets every parameter's
  /// state, on the CPU; the other ranks send theirs.
  void gather_state();
  /// After a checkpoint was written or loaded: only this rank's parameters keep optimizer state.
  void keep_own_state();

  /// Parameters (and their elements) this rank owns, and the optimizer's in all.
  std::int64_t own_count() const { return static_cast<std::int64_t>(own_.size()); }
  std::int64_t own_elements() const;
  std::int64_t count() const { return static_cast<std::int64_t>(params_.size()); }
  std::int64_t elements() const;
  /// Time share_updates spent, all steps: what sharding adds to a step.
  double share_seconds() const { return share_seconds_; }

 private:
  // What one broadcast sends: parameters of one owner, packed into the staging buffer, or one
  // parameter too large to pack, sent in place.
  struct Message {
    int root = 0;
    std::vector<at::Tensor> members;
    std::int64_t elements = 0;
    bool packed = false;
  };
  void plan_messages(const std::vector<at::Tensor>& params, const std::vector<int>& owners, std::int64_t message_bytes);
  void send(const Message& message, const std::string& what);

  torch::optim::Optimizer& optimizer_;
  dist::Communicator& comm_;
  std::vector<at::Tensor> params_;  // the optimizer's, in its order
  std::vector<int> owners_;         // per parameter
  std::vector<at::Tensor> own_;
  std::vector<Message> messages_;
  std::map<c10::ScalarType, at::Tensor> staging_;  // one per dtype, as large as the largest packed message
  double share_seconds_ = 0;
};

/// While it lives, rank 0's optimizer holds every parameter's state, for a checkpoint (every rank
/// makes one together); nothing when `shards` is nullptr (an unsharded run).
class FullOptimizerState {
 public:
  explicit FullOptimizerState(OptimizerShards* shards) : shards_(shards) {
    if (shards_) shards_->gather_state();
  }
  ~FullOptimizerState() {
    if (shards_) shards_->keep_own_state();
  }
  FullOptimizerState(const FullOptimizerState&) = delete;
  FullOptimizerState& operator=(const FullOptimizerState&) = delete;

 private:
  OptimizerShards* shards_;
};

}  // namespace gputrain::train
