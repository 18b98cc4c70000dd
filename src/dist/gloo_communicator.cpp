// The CPU engine for ranks that mpirun did not start (torchrun, srun, our launcher across nodes):
// Gloo through LibTorch's c10d, the backend torch.distributed uses on CPUs. The ranks meet at rank
// 0's TCPStore as NCCL's do; Gloo then connects them pairwise over TCP and runs each collective on
// its own threads, so an all-reduce proceeds while backward computes the next bucket.
//
// LibTorch carries Gloo compiled in (its wheel exports ProcessGroupGloo) but ships no gloo/
// headers; Debian's libgloo-dev provides them. Only pointers to Gloo's classes cross into our
// code: ProcessGroupGloo builds its devices and contexts itself (cmake/GputrainDist.cmake).

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdlib>
#include <exception>

#include "c10d_rendezvous.hpp"
#include "engines.hpp"

namespace gputrain::dist {
namespace {

const char* const kPeerRemedy =
    "see the other ranks' output for the first error; raise distributed.timeout if a rank is only slow (a long validation or "
    "checkpoint on rank 0)";

// Gloo's TCP device: GLOO_SOCKET_IFNAME's interface when set (as for torch.distributed), else the
// address this host's name resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(int rank) {
  try {
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
      return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    return c10d::ProcessGroupGloo::createDefaultDevice();
  } catch (const std::exception& e) {
    throw CommunicationError("rank " + std::to_string(rank) + ": Gloo found no network interface to use: " + e.what(),
                             "export GLOO_SOCKET_IFNAME=<the interface the nodes reach each other on> (ip -brief address)");
  }
}

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
    auto store = meet_at_rank_zero(env, timeout_, "Gloo");
    auto gloo_options = c10d::ProcessGroupGloo::Options::create();
    gloo_options->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout_);
    gloo_options->devices.push_back(gloo_device(rank_));
    try {
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank_, size_, gloo_options);
    } catch (const std::exception& e) {
      throw CommunicationError("rank " + std::to_string(rank_) + ": Gloo could not connect the ranks: " + e.what(),
                               "check that every node reaches the others' addresses (export GLOO_SOCKET_IFNAME=<interface> to pick "
                               "one), and see the other ranks' output");
    }
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
    const auto options = at::TensorOptions().dtype(at::kLong);
    std::vector<at::Tensor> input{at::tensor(values, options)};
    std::vector<std::vector<at::Tensor>> output(1);
    for (int r = 0; r < size_; ++r) output[0].push_back(at::empty({static_cast<std::int64_t>(values.size())}, options));
    wait_on_host(group_->allgather(output, input), what, rank_, timeout_, kPeerRemedy);
    std::vector<std::int64_t> all;
    all.reserve(values.size() * static_cast<std::size_t>(size_));
    for (const auto& part : output[0]) all.insert(all.end(), part.data_ptr<std::int64_t>(), part.data_ptr<std::int64_t>() + part.numel());
    return all;
  }

 private:
  int rank_, size_;
  std::chrono::seconds timeout_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace

std::unique_ptr<Communicator> connect_gloo(const RankEnvironment& env, const CommunicatorOptions& options) {
  return std::make_unique<GlooCommunicator>(env, options);
}

}  // namespace gputrain::dist
