#include <gtest/gtest.h>

#include "memory/block_cache.hpp"

using gputrain::memory::BlockCache;

namespace {

// Fake blocks: the cache never touches the memory, only hands the pointers back.
char g_memory[8];
BlockCache::Block block(int slot, std::uint64_t bytes) { return {&g_memory[slot], &g_memory[slot], nullptr, bytes}; }

}  // namespace

TEST(BlockCache, HandsBackTheNewestBlockOfExactlyTheSizeAsked) {
  BlockCache cache;
  EXPECT_TRUE(cache.keep(block(0, 100), 1000).empty());
  EXPECT_TRUE(cache.keep(block(1, 100), 1000).empty());
  EXPECT_TRUE(cache.keep(block(2, 200), 1000).empty());
  EXPECT_EQ(cache.bytes(), 400U);
  EXPECT_FALSE(cache.take(150).has_value());
  const auto newest = cache.take(100);
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->data, &g_memory[1]);
  EXPECT_EQ(cache.take(100)->data, &g_memory[0]);
  EXPECT_FALSE(cache.take(100).has_value());
  EXPECT_EQ(cache.bytes(), 200U);
  EXPECT_EQ(cache.size(), 1U);
}

TEST(BlockCache, PushesOutTheOldestBlocksPastItsLimit) {
  BlockCache cache;
  cache.keep(block(0, 100), 300);
  cache.keep(block(1, 200), 300);
  const auto out = cache.keep(block(2, 100), 300);  // 400 > 300: the oldest (slot 0) goes
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].data, &g_memory[0]);
  EXPECT_EQ(cache.bytes(), 300U);
  EXPECT_EQ(cache.take(100)->data, &g_memory[2]);  // the pushed-out block is no longer handed back
  EXPECT_FALSE(cache.take(100).has_value());
}

TEST(BlockCache, ABlockAloneOverTheLimitIsNotKept) {
  BlockCache cache;
  const auto out = cache.keep(block(0, 500), 300);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].bytes, 500U);
  EXPECT_EQ(cache.bytes(), 0U);
  EXPECT_FALSE(cache.take(500).has_value());
}

TEST(BlockCache, ShrinkingToZeroGivesBackEveryBlockOldestFirst) {
  BlockCache cache;
  for (int slot = 0; slot < 4; ++slot) cache.keep(block(slot, 64 * (slot % 2 + 1)), 10000);
  const auto out = cache.shrink_to(0);
  ASSERT_EQ(out.size(), 4U);
  for (int slot = 0; slot < 4; ++slot) EXPECT_EQ(out[static_cast<std::size_t>(slot)].data, &g_memory[slot]);
  EXPECT_EQ(cache.bytes(), 0U);
  EXPECT_EQ(cache.size(), 0U);
  EXPECT_FALSE(cache.take(64).has_value());
}
