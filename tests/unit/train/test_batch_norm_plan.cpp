// How gputrain's batch-norm kernels cut a layout into blocks and threads (batch_norm_kernels.hpp's
// plan_for), checked on the host: every thread of every block walked as the kernels walk, each
// (row, channel group) visited exactly once by the reduction grid and by the element-wise grid,
// the workspace large enough for both passes, and a thread's walk with rows in flight. The
// kernels' arithmetic itself needs a GPU (tests/gpu/test_gpu_batch_norm.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
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

namespace {

// What walk_rows<kRows> calls, in order: ('L', row) for a load, ('U', row) for a use.
template <int kRows>
std::vector<std::pair<char, std::int64_t>> calls_of(std::int64_t first, std::int64_t stride, std::int64_t rows) {
  std::vector<std::pair<char, std::int64_t>> calls;
  std::int64_t slot_row[kRows] = {};
  walk_rows<kRows>(
      first, stride, rows,
      [&](int u, std::int64_t r) {
        slot_row[u] = r;
        calls.emplace_back('L', r);
      },
      [&](int u, std::int64_t r) {
        EXPECT_EQ(slot_row[u], r) << "a use reads the slot its row was loaded into";
        calls.emplace_back('U', r);
      });
  return calls;
}

template <int kRows>
void expect_a_plain_walk_with_loads_ahead(std::int64_t first, std::int64_t stride, std::int64_t rows) {
  const std::string what = std::to_string(kRows) + " rows in flight, rows " + std::to_string(first) + " + k * " + std::to_string(stride) +
                           " below " + std::to_string(rows);
  std::vector<std::int64_t> plain, used, loaded;
  for (std::int64_t r = first; r < rows; r += stride) plain.push_back(r);
  std::size_t loaded_ahead = 0;  // loads not yet used
  for (const auto& [kind, row] : calls_of<kRows>(first, stride, rows)) {
    (kind == 'L' ? loaded : used).push_back(row);
    if (kind == 'L') {
      ++loaded_ahead;
      EXPECT_LE(loaded_ahead, static_cast<std::size_t>(kRows)) << what;
    } else {
      ASSERT_GT(loaded_ahead, 0u) << what << ": row " << row << " used before it was loaded";
      --loaded_ahead;
    }
  }
  EXPECT_EQ(used, plain) << what << ": the sums must see the rows in a plain walk's order";
  EXPECT_EQ(loaded, plain) << what;
  // Whole steps issue all their loads before the first use.
  const auto calls = calls_of<kRows>(first, stride, rows);
  if (plain.size() >= static_cast<std::size_t>(kRows)) {
    for (int u = 0; u < kRows; ++u) EXPECT_EQ(calls[static_cast<std::size_t>(u)].first, 'L') << what;
  }
}

}  // namespace

// The reductions' walk (walk_rows) visits what the plain grid-stride loop visits, in its order,
// with up to kRows loads issued ahead of their use: their sums are the plain loop's bit for bit.
TEST(BatchNormPlan, RowsInFlightVisitThePlainWalksRowsInItsOrder) {
  for (const auto& [first, stride, rows] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {0, 1, 10}, {3, 7, 100}, {5, 528 * 32, 262144}, {31, 32, 30}, {0, 4, 4096}, {2, 3, 2}, {0, 5, 21}}) {
    expect_a_plain_walk_with_loads_ahead<1>(first, stride, rows);
    expect_a_plain_walk_with_loads_ahead<2>(first, stride, rows);
    expect_a_plain_walk_with_loads_ahead<4>(first, stride, rows);
  }
}
