#pragma once
// gputrain's environment switches between the layers' own code paths and LibTorch's, for
// comparisons (docs/troubleshooting.md). Each is read where its path is chosen, and refused
// when mistyped (core::env_choice); a run reads them all at its start (check_layer_switches), so
// that a mistyped one stops it before it writes anything.

namespace gputrain::train {

/// GPUTRAIN_BATCH_NORM unset: gputrain's batch-norm kernels where they apply; `aten`: ATen's.
bool batch_norm_kernels_wanted();
/// GPUTRAIN_WEIGHT_CASTS=per-layer: autocast's own casts, not BatchedWeightCasts.
bool weight_casts_per_layer();
/// GPUTRAIN_CPU_MATMUL=mkl: LibTorch's MKL products for the CPU's fp32 linear layers.
bool cpu_matmul_forced_to_mkl();

inline void check_layer_switches() {
  batch_norm_kernels_wanted();
  weight_casts_per_layer();
  cpu_matmul_forced_to_mkl();
}

}  // namespace gputrain::train
