#pragma once
// What the two c10d engines (NCCL for GPU ranks, Gloo for CPU ranks not started by mpirun) share:
// the TCPStore rank 0 hosts at MASTER_ADDR:MASTER_PORT, and waiting for a collective on the host
// so that a dead or hung peer becomes our error (operation, rank, fix) instead of a hang.

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <string>

#include "gputrain/dist/rank_environment.hpp"

namespace gputrain::dist {

/// Meets the other ranks at rank 0's TCPStore (rank 0 hosts it). `engine` names the backend in
/// errors ("NCCL", "Gloo"). Throws UsageError without MASTER_ADDR on several ranks, and
/// CommunicationError when the rendezvous fails or times out.
c10::intrusive_ptr<c10d::Store> meet_at_rank_zero(const RankEnvironment& env, std::chrono::seconds timeout, const std::string& engine);

/// Waits for `work` on the host, polling: past `timeout` (or when it fails) a CommunicationError
/// names `what`, the rank and `remedy`.
void wait_on_host(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what, int rank, std::chrono::seconds timeout,
                  const std::string& remedy);

}  // namespace gputrain::dist
