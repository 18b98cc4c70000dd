#pragma once
// NCCL all-reduce bandwidth between this box's GPUs, as nccl-tests reports it: algbw = bytes / time,
// busbw = algbw x 2(n-1)/n (the traffic each GPU's links carry in a ring, whatever n is), so one
// figure compares with the links' speed. Used by `gputrain verify` on boxes with 2 or more GPUs.

#include <cstdint>

namespace gputrain::dist {

struct AllReduceFigures {
  int gpus = 0;
  std::int64_t bytes = 0;  ///< per GPU, per all-reduce
  double seconds = 0;      ///< one all-reduce, the slowest rank's average
  double algbw_gbps = 0;   ///< bytes / seconds, GB/s (10^9)
  double busbw_gbps = 0;   ///< algbw x 2(n-1)/n
};

/// busbw for an all-reduce over `ranks` ranks at algorithm bandwidth `algbw`.
double all_reduce_bus_bandwidth(double algbw, int ranks);

/// Times `iterations` float32 all-reduces of `bytes` on each of GPUs 0..gpus-1: one thread per GPU,
/// each a rank of a ProcessGroupNCCL (c10d) meeting over an in-process store. Throws Error when
/// this build has no NCCL or fewer than 2 GPUs are asked for.
AllReduceFigures measure_nccl_all_reduce(int gpus, std::int64_t bytes, int iterations);

}  // namespace gputrain::dist
