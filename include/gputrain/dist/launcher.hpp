#pragma once
// dist::launch_local: `gputrain train --nproc-per-node N`, our torchrun for one node. It starts N
// ranks of the same command and watches them: each rank's output is shown (rank 0's as is, the
// others' prefixed "[rank N]") and its last lines kept; when one rank fails, the others get
// SIGTERM, then SIGKILL after a grace period, and the failed rank is named with the end of its
// output. SIGINT/SIGTERM to the launcher is forwarded to every rank, which then stop together at
// a step boundary with a checkpoint (exit 130).
//
// GPU ranks (NCCL) are started directly with torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT). Across nodes, as torchrun's static
// rendezvous: each node's launcher starts its share, ranks node_rank x N and on, all meeting at
// node 0's address. CPU ranks (MPI) need MPI's own runtime, so they are started through
// `mpirun -np N` on one node, whose job is then watched the same way.

#include <iosfwd>
#include <string>
#include <vector>

#include "gputrain/dist/rank_environment.hpp"

namespace gputrain::dist {

/// Set in every rank our launcher starts: that process is a rank, not another launcher.
inline constexpr const char* kLaunchedVariable = "GPUTRAIN_LAUNCHED";

struct LaunchSpec {
  int ranks = 1;                     ///< processes to start on this node
  bool through_mpirun = false;       ///< MPI ranks: start them with mpirun
  std::vector<std::string> command;  ///< the rank's argv (argv[0] an absolute path)
  int nodes = 1;                     ///< nodes whose launchers start `ranks` each (torchrun's --nnodes)
  int node_rank = 0;                 ///< this node's place: its ranks are node_rank * ranks + 0 .. ranks-1
  std::string master_addr;           ///< where rank 0's TCPStore listens; "": 127.0.0.1 (one node)
  int master_port = 0;               ///< NCCL rendezvous port; 0: a free one (one node only)
  double grace_seconds = 10;         ///< between SIGTERM and SIGKILL when stopping the others
  int tail_lines = 20;               ///< lines of a failed rank's output to repeat
};

/// Throws UsageError when `spec` cannot start: no ranks, a node rank outside the nodes, several
/// nodes of MPI ranks (mpirun's to start) or without the address and port they meet at.
void check_launch(const LaunchSpec& spec);

/// Runs the ranks to the end (check_launch first). Returns 0 when every rank exited 0, 130 when they stopped on a
/// forwarded signal, else the failed rank's exit code (1 for a rank killed by a signal), after
/// writing to `report` which rank failed, how, and its last lines. Throws EnvironmentError when
/// a rank cannot be started (no mpirun, no free port).
int launch_local(const LaunchSpec& spec, std::ostream& report);

/// Whether `gputrain train` with distributed.nproc_per_node > 0 starts the ranks itself. Not in a
/// rank our launcher started (kLaunchedVariable), nor under another launcher (torchrun, srun,
/// mpirun: their variables are set, and --nproc-per-node is theirs), unless `nnodes` > 1 makes this
/// process its node's launcher (a Kubeflow pod's RANK and WORLD_SIZE count pods, not ranks) or
/// that launcher started this process alone (srun in `sbatch --ntasks=1`).
bool starts_ranks_here(int nproc_per_node, int nnodes, const EnvLookup& env = process_environment());

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick).
int free_local_port();

/// The rank and what happened to it, from Open MPI's own words when a job ends badly ("MPI_ABORT
/// was invoked on rank 1 ... with errorcode 3", "process rank 1 ... exited on signal 9",
/// "Process name: [[123,1],1] Exit code: 3"). Returns false when `mpirun_output` has none of them.
bool parse_mpirun_failure(const std::string& mpirun_output, int& rank, std::string& how);

}  // namespace gputrain::dist
