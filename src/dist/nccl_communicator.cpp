// The GPU engine: NCCL through LibTorch's c10d. Rank 0 hosts the TCPStore the ranks meet at;
// ProcessGroupNCCL runs the collectives on its own CUDA streams, ordered after the compute stream.
// Once CUDA graphs hold the collectives, host values (the step agreement) go over a Gloo group on
// the same store instead (gloo_group.hpp).
//
// Compiled with USE_C10D_NCCL against the nccl.h of the NCCL package LibTorch loads (the wheel's
// nvidia-nccl): ProcessGroupNCCL::Options embeds ncclConfig_t, so another header's layout would
// corrupt memory silently. cmake/GputrainDist.cmake finds that header; test_nccl_header checks
// the header's version against the library loaded.

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <exception>

#include "c10d_rendezvous.hpp"
#include "engines.hpp"
#include "gloo_group.hpp"

namespace gputrain::dist {
namespace {

const char* const kPeerRemedy =
    "see the other ranks' output for the first error; raise distributed.timeout if a rank is only slow (a long validation or "
    "checkpoint on rank 0); NCCL_DEBUG=INFO shows what NCCL saw";

class NcclWork final : public Work {
 public:
  NcclWork(c10::intrusive_ptr<c10d::Work> work, std::string what, int rank) : work_(std::move(work)), what_(std::move(what)), rank_(rank) {}
  // Orders the current stream after the collective; the host goes on (a hang surfaces at the
  // next host-side wait, the step agreement, or through the watchdog).
  void wait() override {
    try {
      work_->wait();
    } catch (const std::exception& e) {
      throw CommunicationError("rank " + std::to_string(rank_) + ": " + what_ + " failed: " + e.what(), kPeerRemedy);
    }
  }

 private:
  std::optional<double> seconds() const override { return std::nullopt; }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  int rank_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const RankEnvironment& env, const CommunicatorOptions& options)
      : rank_(env.rank),
        size_(env.world_size),
        device_(options.device),
        timeout_(options.timeout),
        master_addr_(env.master_addr),
        host_values_stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, options.device.index())) {
    store_ = meet_at_rank_zero(env, {timeout_, "NCCL", options.progress});
    auto pg_options = c10d::ProcessGroupNCCL::Options::create();
    // The watchdog's limit sits past ours, so our message (operation, step, rank) comes first.
    pg_options->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout_ + std::chrono::seconds(30));
    group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store_, rank_, size_, pg_options);
    group_->setBoundDeviceId(device_);  // one communicator per rank, created eagerly on this GPU
    group_->eagerConnectSingleDevice(device_);
  }

  // A clean end finalizes the communicators (left to the process exit, c10d warns). While an error
  // unwinds, a peer may be gone with collectives pending, and a graceful finalize would wait for
  // them forever: abort instead.
  ~NcclCommunicator() override {
    try {
      if (std::uncaught_exceptions() > 0)
        group_->abort();
      else
        group_->shutdown();
    } catch (const std::exception&) {
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::nccl; }

  std::shared_ptr<Work> all_reduce_sum(at::Tensor tensor, const std::string& what) override {
    std::vector<at::Tensor> tensors{std::move(tensor)};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    return std::make_shared<NcclWork>(group_->allreduce(tensors, opts), what, rank_);
  }

  void broadcast(const std::vector<at::Tensor>& tensors, int root, const std::string& what) override {
    broadcast_on_host(*group_, tensors, root, what, rank_, timeout_, kPeerRemedy);
  }

  std::shared_ptr<Work> start_broadcast(at::Tensor tensor, int root, const std::string& what) override {
    std::vector<at::Tensor> tensors{std::move(tensor)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    return std::make_shared<NcclWork>(group_->broadcast(tensors, opts), what, rank_);
  }

  std::vector<std::int64_t> all_gather(const std::vector<std::int64_t>& values, const std::string& what) override {
    if (host_group_) return gloo_all_gather(*host_group_, values, what, rank_, timeout_, kPeerRemedy);
    // Host values depend on nothing the GPU has queued: issued from a side stream, the collective
    // waits for earlier collectives only, not for the queued forward, backward and optimizer step,
    // and the per-step agreement does not drain the GPU's queue (the host stays ahead of it).
    c10::cuda::CUDAStreamGuard side(host_values_stream_);
    const auto options = at::TensorOptions().dtype(at::kLong);
    auto input = at::tensor(values, options).to(device_);
    auto output = at::empty({static_cast<std::int64_t>(values.size()) * size_}, options.device(device_));
    wait_on_host(group_->_allgather_base(output, input), what, rank_, timeout_, kPeerRemedy);
    const auto host = output.cpu();
    return std::vector<std::int64_t>(host.data_ptr<std::int64_t>(), host.data_ptr<std::int64_t>() + host.numel());
  }

  // A replayed graph's all-reduces run on the graph's streams, not on NCCL's, and NCCL keeps a
  // communicator's operations in order only within one stream: an all-gather of ours beside them
  // could pair its kernels with the wrong operation across ranks. Host values then go over Gloo,
  // which never touches the GPU (on a VM it costs more host time a step than the side stream).
  void graphs_hold_collectives() override {
    if (!host_group_)
      host_group_ = connect_gloo_group(c10::make_intrusive<c10d::PrefixStore>("host_values", store_), rank_, size_, timeout_, master_addr_);
  }

 private:
  int rank_, size_;
  c10::Device device_;
  std::chrono::seconds timeout_;
  std::string master_addr_;
  c10::cuda::CUDAStream host_values_stream_;  // for all_gather while no graph holds collectives
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
  c10::intrusive_ptr<c10d::Backend> host_group_;  // Gloo, for all_gather once graphs hold collectives
};

}  // namespace

std::unique_ptr<Communicator> connect_nccl(const RankEnvironment& env, const CommunicatorOptions& options) {
  return std::make_unique<NcclCommunicator>(env, options);
}

}  // namespace gputrain::dist
