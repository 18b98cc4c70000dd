#pragma once
// sizing::auto_num_workers: how many data-loader worker threads each rank gets when
// `data.num_workers: auto`. The rule (docs/memory.md, "Auto workers"): share the cores this
// process may really use (affinity and cgroup quota, not the host's count) among the ranks of
// this node, keep one core per rank for the training thread, and stop at 8 per rank, beyond
// which decoded-tensor loaders rarely get faster. `gputrain profile` refines it by measurement.

#include <string>

namespace gputrain::sizing {

struct WorkerPlan {
  int workers = 0;     ///< worker threads per rank (0: the training thread loads)
  std::string reason;  ///< "2 usable cores, 1 rank on this node: 1 core per rank for training"
};

constexpr int kMaxWorkersPerRank = 8;

/// `usable_cores`: device::SystemInfo::usable_cores. `ranks_per_node`: training processes on
/// this node (LOCAL_WORLD_SIZE); 0 means one per GPU (`gpus_per_node`), or 1 without GPUs.
/// `bound`: device::SystemInfo::affinity_narrowed: a launcher bound this rank to its own cores
/// (mpirun, srun), so they are this rank's alone and are not shared again.
WorkerPlan auto_num_workers(double usable_cores, int gpus_per_node, int ranks_per_node, bool bound = false);

}  // namespace gputrain::sizing
