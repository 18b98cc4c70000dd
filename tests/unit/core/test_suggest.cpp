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
  // A name replaced whole is no typo of it: train.freeze: [""] was offered the MLP's layer '1'.
  EXPECT_FALSE(closest_match("", {"0", "1"}).has_value());
  EXPECT_FALSE(closest_match("[", {"0", "1"}).has_value());
  EXPECT_EQ(closest_match("l", {"0", "l1"}), "l1");
}

TEST(Suggest, DidYouMeanAmongIsTheTailOfAnError) {
  EXPECT_EQ(did_you_mean_among("virginca", {"setosa", "versicolor", "virginica"}), "; did you mean 'virginica'?");
  EXPECT_EQ(did_you_mean_among("bird", {"cat", "dog"}), "");
}

TEST(Suggest, LikelyChoicesTriesCaseThenPrefixThenTypo) {
  using gputrain::core::likely_choices;
  const std::vector<std::string> precisions{"fp32", "fp16-mixed", "bf16-mixed"};
  EXPECT_EQ(likely_choices("BF16-MIXED", precisions), std::vector<std::string>{"bf16-mixed"});
  EXPECT_EQ(likely_choices("bf1", precisions), std::vector<std::string>{"bf16-mixed"});
  EXPECT_EQ(likely_choices("fp", precisions), (std::vector<std::string>{"fp32", "fp16-mixed"}));
  EXPECT_EQ(likely_choices("fp33", precisions), std::vector<std::string>{"fp32"});
  EXPECT_TRUE(likely_choices("int8", precisions).empty());
  EXPECT_TRUE(likely_choices("", precisions).empty());
}
