// How gputrain's batch-norm kernels cut a layout into blocks and threads (batch_norm_kernels.hpp's
// plan_for), checked on the host: every thread of every block walked as the kernels walk, each
// (row, channel group) visited exactly once by the reduction grid and by the element-wise grid,
// and the workspace large enough for both passes. The kernels' arithmetic itself needs a GPU
// (tests/gpu/test_gpu_batch_norm.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "train/models/layers/batch_norm_kernels.hpp"

using namespace gputrain::train::batch_norm_kernels;

namespace {

// Visits of each (row, group) by `blocks` blocks of plan.threads threads, walking as the kernels do.
std::vector<int> visits(const Layout& layout, const Plan& plan, int blocks) {
  std::vector<int> seen(static_cast<std::size_t>(layout.rows * plan.groups), 0);
  const std::int64_t stride = std::int64_t{blocks} * plan.rows_per_block;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < plan.threads; ++t)
      for (std::int64_t r = std::int64_t{b} * plan.rows_per_block + t / plan.groups; r < layout.rows; r += stride)
        ++seen[static_cast<std::size_t>(r * plan.groups + t % plan.groups)];
  return seen;
}

void expect_every_row_once(const Layout& layout, int multiprocessors) {
  const auto plan = plan_for(layout, multiprocessors);
  const std::string what =
      std::to_string(layout.rows) + " rows x " + std::to_string(layout.channels) + " channels, " + std::to_string(multiprocessors) + " SMs";
  ASSERT_LE(plan.threads, Plan::kThreads) << what;
  EXPECT_EQ(plan.threads, plan.rows_per_block * plan.groups) << what;
  EXPECT_EQ(plan.groups * Plan::kVector, layout.channels) << what;
  EXPECT_LE(plan.reduction_blocks, multiprocessors * Plan::kReductionBlocksPerSm) << what;
  EXPECT_LE(plan.elementwise_blocks, multiprocessors * Plan::kElementwiseBlocksPerSm) << what;
  for (const int blocks : {plan.reduction_blocks, plan.elementwise_blocks}) {
    const auto seen = visits(layout, plan, blocks);
    for (std::size_t i = 0; i < seen.size(); ++i)
      ASSERT_EQ(seen[i], 1) << what << ", " << blocks << " blocks: row " << i / static_cast<std::size_t>(plan.groups) << " group "
                            << i % static_cast<std::size_t>(plan.groups);
  }
  // Forward: two partials per block and channel, a count per block, scale and shift per channel.
  // Backward: two partials per block and channel, three coefficients per channel.
  const std::int64_t partials = 2 * std::int64_t{plan.reduction_blocks} * layout.channels;
  EXPECT_GE(plan.workspace_floats, partials + plan.reduction_blocks + 2 * layout.channels) << what;
  EXPECT_GE(plan.workspace_floats, partials + 3 * layout.channels) << what;
}

}  // namespace

TEST(BatchNormPlan, EveryRowAndChannelGroupIsVisitedOnceByBothGrids) {
  const Layout layouts[] = {
      {Element::bfloat16, 2, 8},        // the fewest rows the kernels take
      {Element::bfloat16, 18, 512},     // 4 rows a block
      {Element::float16, 252, 128},     // rows not a multiple of a block's
      {Element::bfloat16, 3, 2048},     // one row a block
      {Element::bfloat16, 65536, 24},   // 3 groups: 85 rows a block, 255 threads
      {Element::bfloat16, 262144, 64},  // ResNet-18's first stage at batch 256: more rows than threads
      {Element::bfloat16, 4097, 1024},  // ResNet-50's widest at an odd row count
  };
  for (const auto& layout : layouts)
    for (const int sms : {1, 7, 132}) expect_every_row_once(layout, sms);
}

TEST(BatchNormPlan, ReductionThreadsSumSeveralRowsWhereThereAreEnough) {
  const Layout big{Element::bfloat16, 262144, 64};
  const auto plan = plan_for(big, 132);
  EXPECT_EQ(plan.reduction_blocks, 132 * Plan::kReductionBlocksPerSm);  // the cap: enough loads in flight
  const Layout small{Element::bfloat16, 4096, 512};
  const auto few = plan_for(small, 132);
  const std::int64_t rows_per_thread = small.rows / (std::int64_t{few.reduction_blocks} * few.rows_per_block);
  EXPECT_GE(rows_per_thread, Plan::kMinRowsPerThread);
}

TEST(BatchNormPlan, TheKernelsTakeWholeVectorsOfChannelsAndTwoRows) {
  EXPECT_TRUE(supports({Element::bfloat16, 2, 8}));
  EXPECT_TRUE(supports({Element::float16, 100, kMaxChannels}));
  EXPECT_FALSE(supports({Element::bfloat16, 1, 64}));                  // one row: no variance
  EXPECT_FALSE(supports({Element::bfloat16, 100, 12}));                // not whole 16-byte vectors
  EXPECT_FALSE(supports({Element::bfloat16, 100, kMaxChannels + 8}));  // more groups than a block's threads
  EXPECT_FALSE(supports({Element::bfloat16, 0, 64}));
}
