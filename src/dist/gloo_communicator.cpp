// The CPU engine for ranks that mpirun did not start (torchrun, srun, our launcher across nodes):
// Gloo through LibTorch's c10d, the backend torch.distributed uses on CPUs. The ranks meet at rank
// 0's TCPStore as NCCL's do; Gloo then connects them pairwise over TCP and runs each collective on
// its own threads, so an all-reduce proceeds while backward computes the next bucket.

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "c10d_rendezvous.hpp"
#include "engines.hpp"
#include "gloo_group.hpp"

namespace gputrain::dist {
namespace {

const char* const kPeerRemedy =
    "see the other ranks' output for the first error; raise distributed.timeout if a rank is only slow (a long validation or "
    "checkpoint on rank 0)";

class GlooWork final : public Work {
 public:
  GlooWork(c10::intrusive_ptr<c10d::Work> work, std::string what, int rank, std::chrono::seconds timeout)
      : work_(std::move(work)), what_(std::move(what)), rank_(rank), timeout_(timeout) {}
  void wait() override { wait_on_host(work_, what_, rank_, timeout_, kPeerRemedy); }
  std::optional<double> seconds() const override { return std::nullopt; }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  int rank_;
  std::chrono::seconds timeout_;
};

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const RankEnvironment& env, const CommunicatorOptions& options)
      : rank_(env.rank), size_(env.world_size), timeout_(options.timeout) {
    group_ = connect_gloo_group(meet_at_rank_zero(env, {timeout_, "Gloo", options.progress}), rank_, size_, timeout_, env.master_addr);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::gloo; }

  std::shared_ptr<Work> all_reduce_sum(at::Tensor tensor, const std::string& what) override {
    TORCH_CHECK(tensor.is_cpu() && tensor.is_contiguous(), what, ": Gloo reduces contiguous CPU tensors here");
    std::vector<at::Tensor> tensors{std::move(tensor)};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    return std::make_shared<GlooWork>(group_->allreduce(tensors, opts), what, rank_, timeout_);
  }

  void broadcast(const std::vector<at::Tensor>& tensors, int root, const std::string& what) override {
    broadcast_on_host(*group_, tensors, root, what, rank_, timeout_, kPeerRemedy);
  }

  std::shared_ptr<Work> start_broadcast(at::Tensor tensor, int root, const std::string& what) override {
    std::vector<at::Tensor> tensors{std::move(tensor)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    return std::make_shared<GlooWork>(group_->broadcast(tensors, opts), what, rank_, timeout_);
  }

  std::vector<std::int64_t> all_gather(const std::vector<std::int64_t>& values, const std::string& what) override {
    return gloo_all_gather(*group_, values, what, rank_, timeout_, kPeerRemedy);
  }

 private:
  int rank_, size_;
  std::chrono::seconds timeout_;
  c10::intrusive_ptr<c10d::Backend> group_;
};

}  // namespace

std::unique_ptr<Communicator> connect_gloo(const RankEnvironment& env, const CommunicatorOptions& options) {
  return std::make_unique<GlooCommunicator>(env, options);
}

}  // namespace gputrain::dist
