#include "gputrain/sizing/auto_workers.hpp"

#include <algorithm>
#include <cmath>

#include "gputrain/core/units.hpp"

namespace gputrain::sizing {

WorkerPlan auto_num_workers(double usable_cores, int gpus_per_node, int ranks_per_node, bool bound) {
  const int ranks = ranks_per_node > 0 ? ranks_per_node : std::max(1, gpus_per_node);
  const int cores = std::max(1, static_cast<int>(std::floor(usable_cores + 1e-9)));
  // A rank bound to its own cores (one of several) sees only those: they are its share already.
  const bool own_cores = bound && ranks > 1;
  const int per_rank = own_cores ? cores : std::max(1, cores / ranks);
  WorkerPlan plan;
  plan.workers = std::min(kMaxWorkersPerRank, per_rank - 1);
  const std::string usable = core::format_fixed(usable_cores, usable_cores == std::floor(usable_cores) ? 0 : 1) +
                             (usable_cores == 1 ? " usable core" : " usable cores");
  const std::string node = own_cores ? usable + " of this rank (the launcher bound it to them)"
                                     : usable + ", " + core::counted(ranks, "rank") + " on this node" +
                                           (ranks_per_node > 0 || gpus_per_node <= 1 ? "" : " (one per GPU)");
  // More ranks than cores share them: each training thread has less than a core, and no loader thread.
  plan.reason = !own_cores && ranks > cores
                    ? node + ": fewer cores than ranks, so the training threads share them and no loader threads are added"
                    : node + ": " + core::counted(per_rank, "core") + " per rank, one of them for the training thread" +
                          (per_rank - 1 > kMaxWorkersPerRank ? ", at most " + std::to_string(kMaxWorkersPerRank) + " workers" : "");
  return plan;
}

}  // namespace gputrain::sizing
