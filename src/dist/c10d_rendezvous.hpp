#pragma once
// What the two c10d engines (NCCL for GPU ranks, Gloo for CPU ranks not started by mpirun) share:
// the TCPStore rank 0 hosts at MASTER_ADDR:MASTER_PORT, and waiting for a collective on the host
// so that a dead or hung peer becomes our error (operation, rank, fix) instead of a hang.

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/core/Tensor.h>

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "gputrain/dist/rank_environment.hpp"

namespace c10d {
class Backend;
}

namespace gputrain::dist {

/// How ranks wait for each other at the rendezvous.
struct RendezvousOptions {
  std::chrono::seconds timeout{300};  ///< distributed.timeout
  std::string engine;                 ///< the backend, in errors: "NCCL", "Gloo"
  std::ostream* progress = nullptr;   ///< where a long wait says how it stands (stderr in a run)
  std::chrono::milliseconds first_report{10000}, report_every{30000};
};

/// Meets the other ranks at rank 0's TCPStore (rank 0 hosts it and waits until every rank has
/// joined). A long wait says who is missing; a stop signal ends it (Error, exit 130). Throws
/// UsageError without MASTER_ADDR on several ranks, and CommunicationError when the port is taken,
/// rank 0 cannot be reached, or ranks are missing after the timeout (naming them).
c10::intrusive_ptr<c10d::Store> meet_at_rank_zero(const RankEnvironment& env, const RendezvousOptions& options);

/// Waits for `work` on the host, polling: past `timeout` (or when it fails) a CommunicationError
/// names `what`, the rank and `remedy`.
void wait_on_host(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what, int rank, std::chrono::seconds timeout,
                  const std::string& remedy);

/// Broadcasts `tensors` from rank `root` over `group`, one at a time, each waited for on the host
/// (wait_on_host); a tensor that is not contiguous goes through a contiguous copy, written back.
void broadcast_on_host(c10d::Backend& group, const std::vector<at::Tensor>& tensors, int root, const std::string& what, int rank,
                       std::chrono::seconds timeout, const std::string& remedy);

}  // namespace gputrain::dist
