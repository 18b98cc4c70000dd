#include <gtest/gtest.h>

#include "gputrain/core/suggest.hpp"

using namespace gputrain::core;

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("epoch", "epochs"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("trian", "train"), 1u);  // two neighbouring letters swapped: one typo
  EXPECT_EQ(edit_distance("optimzier", "optimizer"), 1u);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(Suggest, ClosestMatchOnlyForPlausibleTypos) {
  const std::vector<std::string> words{"train.epochs", "train.max_steps", "optimizer.lr"};
  EXPECT_EQ(closest_match("train.epoch", words), "train.epochs");
  EXPECT_EQ(closest_match("train.maxsteps", words), "train.max_steps");
  EXPECT_FALSE(closest_match("completely.different", words).has_value());
  EXPECT_EQ(closest_match("trian", {"profile", "train", "verify"}), "train");
}
