#include "c10d_rendezvous.hpp"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <thread>

#include "gputrain/dist/communicator.hpp"

namespace gputrain::dist {

c10::intrusive_ptr<c10d::Store> meet_at_rank_zero(const RankEnvironment& env, std::chrono::seconds timeout, const std::string& engine) {
  if (env.world_size > 1 && env.master_addr.empty())
    throw UsageError("MASTER_ADDR is not set: " + engine + " ranks meet at rank 0's address",
                     "launch with torchrun, gputrain train --nproc-per-node, or srun (which gives the first node); "
                     "or export MASTER_ADDR and MASTER_PORT");
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port > 0 ? env.master_port : c10d::TCPStoreOptions::kDefaultPort);
  options.isServer = env.rank == 0;
  options.numWorkers = static_cast<std::size_t>(env.world_size);
  options.waitWorkers = true;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  const std::string host = env.master_addr.empty() ? "127.0.0.1" : env.master_addr;
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const std::exception& e) {
    const std::string where = host + ":" + std::to_string(options.port);
    throw CommunicationError("rank " + std::to_string(env.rank) + ": rendezvous at " + where + " failed: " + e.what(),
                             env.rank == 0 ? "is the port free? pick another MASTER_PORT"
                                           : "is rank 0 running, and is " + where + " reachable from this node (firewall)?");
  }
}

void wait_on_host(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what, int rank, std::chrono::seconds timeout,
                  const std::string& remedy) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!work->isCompleted()) {
    if (std::chrono::steady_clock::now() > deadline)
      throw CommunicationError("rank " + std::to_string(rank) + ": " + what + " did not finish within " + std::to_string(timeout.count()) +
                                   " s: another rank stopped or hangs (any collective issued before it may be the one stuck)",
                               remedy);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  try {
    work->wait();
  } catch (const std::exception& e) {
    throw CommunicationError("rank " + std::to_string(rank) + ": " + what + " failed: " + e.what(), remedy);
  }
}

void broadcast_on_host(c10d::Backend& group, const std::vector<at::Tensor>& tensors, int root, const std::string& what, int rank,
                       std::chrono::seconds timeout, const std::string& remedy) {
  for (const auto& t : tensors) {
    std::vector<at::Tensor> one{t.is_contiguous() ? t : t.contiguous()};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    wait_on_host(group.broadcast(one, opts), what, rank, timeout, remedy);
    if (!one[0].is_same(t)) t.copy_(one[0]);
  }
}

}  // namespace gputrain::dist
