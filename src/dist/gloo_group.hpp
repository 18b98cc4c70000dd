#pragma once
// Gloo process groups (LibTorch's c10d::ProcessGroupGloo), shared by the Gloo engine (CPU ranks)
// and the NCCL engine, which exchanges host values over Gloo once CUDA graphs hold its
// collectives: its step agreement then runs no NCCL kernel beside the ones a replayed graph
// launches on the same communicator (NCCL orders a communicator's kernels only within one stream).
//
// Gloo's classes stay inside gloo_group.cpp, the one file built with Gloo's headers.

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace gputrain::dist {

/// Connects `size` ranks pairwise over TCP through `store` (a c10d::PrefixStore keeps two groups on
/// one store apart). The interface is GLOO_SOCKET_IFNAME's when set, as for torch.distributed;
/// else the loopback when the ranks meet at a loopback `master_addr`, or none (a world of one);
/// else NCCL_SOCKET_IFNAME's when it names one interface this host has (nccl_interface); else the
/// address this host's name resolves to. Throws CommunicationError naming the fix.
c10::intrusive_ptr<c10d::Backend> connect_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                     std::chrono::seconds timeout, const std::string& master_addr);

/// Whether `address` (MASTER_ADDR) is this host's loopback: "localhost", 127.x.y.z or ::1.
bool is_loopback_address(const std::string& address);

/// The interface an NCCL_SOCKET_IFNAME value names, when it names exactly one that this host has
/// ("eth0", or NCCL's exact-match form "=eth0"); empty for prefixes NCCL would match ("eth"),
/// lists, exclusions ("^docker") and names this host lacks.
std::string nccl_interface(const std::string& setting);

/// Every rank's `values` (the same count on each), concatenated in rank order, waited for on the
/// host (wait_on_host: `what`, `rank`, `timeout` and `remedy` name a failure).
std::vector<std::int64_t> gloo_all_gather(c10d::Backend& group, const std::vector<std::int64_t>& values, const std::string& what, int rank,
                                          std::chrono::seconds timeout, const std::string& remedy);

}  // namespace gputrain::dist
