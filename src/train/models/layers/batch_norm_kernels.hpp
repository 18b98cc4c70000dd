#pragma once
// Training-mode batch norm over channels-last (NHWC) bf16 or fp16 activations, with the ReLU and
// the residual add of a ResNet block folded in: relu(bn(x) + residual). Plain pointers and no
// LibTorch, so that nvcc compiles the kernels' file (batch_norm_kernels.cu) alone, in seconds.
// The autograd function that calls them is fused_batch_norm.cpp.
//
// Why: on an H200, ATen's channels_last batch norm plus the separate ReLU, add and their backward
// passes took 2.38 ms of a ResNet-18 step's 4.6 ms of kernels (docs/benchmarks.md), its statistics
// reading HBM at 12 % of its bandwidth. Here each pass is one read of its inputs at 16 bytes a load.

#include <algorithm>
#include <cstdint>

#include "core/host_device.hpp"

namespace gputrain::train::batch_norm_kernels {

enum class Element { bfloat16, float16 };

/// rows x channels, each row `channels` contiguous elements (NHWC: rows = N * H * W).
struct Layout {
  Element element = Element::bfloat16;
  std::int64_t rows = 0;
  int channels = 0;
};

/// Whether the kernels take this layout: channels a multiple of 8 (a row moves as 16-byte
/// vectors), at most kMaxChannels, and more than one row (the variance needs two).
inline constexpr int kMaxChannels = 2048;
inline bool supports(const Layout& layout) {
  return layout.rows > 1 && layout.channels > 0 && layout.channels % 8 == 0 && layout.channels <= kMaxChannels;
}

struct Forward {
  const void* input = nullptr;
  const void* residual = nullptr;  // nullable: no residual add
  void* output = nullptr;
  const float* weight = nullptr;  // nullable together with bias: no affine transform
  const float* bias = nullptr;
  float* running_mean = nullptr;  // nullable together with running_var: statistics not tracked
  float* running_var = nullptr;
  float* save_mean = nullptr;    // [channels], for the backward
  float* save_invstd = nullptr;  // [channels]
  double eps = 1e-5;
  double momentum = 0.1;
  bool relu = false;
  // nullable: the layer's num_batches_tracked (int64 on the device), counted by the pass that
  // updates the running statistics, instead of by a kernel of its own per layer and step
  std::int64_t* batches_tracked = nullptr;
};

struct Backward {
  const void* grad_output = nullptr;
  const void* output = nullptr;  // the forward's output, read for ReLU's mask (only with relu)
  const void* input = nullptr;
  void* grad_input = nullptr;
  // With relu: the output gradient through ReLU's mask, written by the first pass for the last
  // (the residual's gradient, or scratch); nullptr: the last pass masks grad_output itself.
  void* grad_residual = nullptr;
  // nullable: the output's second reader's gradient (a forked output: a block's input read by its
  // convolution and its shortcut), added to grad_output in the first pass, rounded to the element
  // type as autograd's add of the two would. Needs relu and grad_residual.
  const void* grad_output_other = nullptr;
  const float* weight = nullptr;  // nullable: no affine transform
  const float* save_mean = nullptr;
  const float* save_invstd = nullptr;
  float* grad_weight = nullptr;  // [channels], always written
  float* grad_bias = nullptr;    // [channels], always written
  bool relu = false;
};

/// How a layout is cut up, from the GPU's multiprocessor count alone (so the host tests it:
/// tests/unit/train/test_batch_norm_plan.cpp). A thread owns one group of 8 channels of a row and
/// walks rows first, first + stride, ...: thread t of block b starts at row
/// b * rows_per_block + t / groups with channel group t % groups, the stride being
/// blocks * rows_per_block. The reductions use fewer blocks (each thread sums at least
/// kMinRowsPerThread rows where there are enough), and write one partial per block and channel.
struct Plan {
  static constexpr int kThreads = 256, kVector = 8;  // a block's threads; elements per 16-byte load
  static constexpr int kMinRowsPerThread = 8;        // a reduction thread's share below which blocks are wasted
  static constexpr int kReductionBlocksPerSm = 4;    // enough loads in flight; fewer partials to combine
  static constexpr int kElementwiseBlocksPerSm = 8;
  int groups = 1, rows_per_block = 1, threads = 1, reduction_blocks = 1, elementwise_blocks = 1;
  std::int64_t workspace_floats = 0;  // partials (2 per block and channel, a count per block) and 3 per channel
};

inline Plan plan_for(const Layout& layout, int multiprocessors) {
  Plan plan;
  plan.groups = layout.channels / Plan::kVector;
  plan.rows_per_block = std::max(1, Plan::kThreads / plan.groups);
  plan.threads = plan.rows_per_block * plan.groups;
  const std::int64_t row_blocks = (layout.rows + plan.rows_per_block - 1) / plan.rows_per_block;
  const std::int64_t sms = std::max(1, multiprocessors);
  plan.reduction_blocks = static_cast<int>(
      std::clamp<std::int64_t>((row_blocks + Plan::kMinRowsPerThread - 1) / Plan::kMinRowsPerThread, 1, sms * Plan::kReductionBlocksPerSm));
  plan.elementwise_blocks = static_cast<int>(std::clamp<std::int64_t>(row_blocks, 1, sms * Plan::kElementwiseBlocksPerSm));
  plan.workspace_floats =
      2 * std::int64_t{plan.reduction_blocks} * layout.channels + plan.reduction_blocks + 3 * std::int64_t{layout.channels};
  return plan;
}

/// A thread's rows first, first + stride, ... below `rows`, kRows at a time: `load(u, row)` for
/// each of them first, then `use(u, row)` in row order, so that a step's loads are all in flight
/// together and what `use` sums comes out as a plain walk's. Once unrolled, the slot u is a
/// compile-time index and what `load` fills stays in registers. (Host-tested:
/// tests/unit/train/test_batch_norm_plan.cpp.)
#ifdef __CUDACC__
#pragma nv_exec_check_disable  // instantiated with __device__ lambdas by the kernels, host ones by the test
#endif
template <int kRows, typename Load, typename Use>
GPUTRAIN_HOST_DEVICE inline void walk_rows(std::int64_t first, std::int64_t stride, std::int64_t rows, Load load, Use use) {
  for (std::int64_t r = first; r < rows; r += kRows * stride) {
    GPUTRAIN_UNROLL
    for (int u = 0; u < kRows; ++u)
      if (r + u * stride < rows) load(u, r + u * stride);
    GPUTRAIN_UNROLL
    for (int u = 0; u < kRows; ++u)
      if (r + u * stride < rows) use(u, r + u * stride);
  }
}

/// The plan on the current device. Returns nullptr, or CUDA's message when it cannot say the
/// device's multiprocessor count.
const char* plan_on_device(const Layout& layout, Plan& plan);

/// Launch the passes on `stream` (a cudaStream_t) of the current device, `workspace` holding
/// plan_on_device(layout).workspace_floats floats on it. Return nullptr, or CUDA's message when a launch failed.
const char* forward(const Layout& layout, const Forward& args, float* workspace, void* stream);
const char* backward(const Layout& layout, const Backward& args, float* workspace, void* stream);

}  // namespace gputrain::train::batch_norm_kernels
