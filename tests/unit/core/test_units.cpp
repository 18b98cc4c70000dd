#include <gtest/gtest.h>

#include "gputrain/core/units.hpp"

using namespace gputrain::core;

TEST(FormatBytes, PicksTheLargestBinaryUnit) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(8 * kGiB), "8.00 GiB");
  EXPECT_EQ(format_bytes(3 * kMiB + kMiB / 2), "3.50 MiB");
}

TEST(FormatFixed, RoundsToTheGivenDecimals) {
  EXPECT_EQ(format_fixed(3.14159, 2), "3.14");
  EXPECT_EQ(format_fixed(2.5, 0), "2");  // round-half-even as printf does
  EXPECT_EQ(format_fixed(-1.005, 1), "-1.0");
}

TEST(WithCommas, GroupsDigitsInThrees) {
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(1000), "1,000");
  EXPECT_EQ(with_commas(178956970), "178,956,970");
  EXPECT_EQ(with_commas(18446744073709551615ULL), "18,446,744,073,709,551,615");
}

TEST(FormatParameterCount, ExactBelowAMillionThenMillions) {
  EXPECT_EQ(format_parameter_count(1), "1 parameter");
  EXPECT_EQ(format_parameter_count(999), "999 parameters");
  EXPECT_EQ(format_parameter_count(4675), "4,675 parameters");
  EXPECT_EQ(format_parameter_count(999999), "999,999 parameters");
  EXPECT_EQ(format_parameter_count(11173962), "11.17 M parameters");
}

TEST(ParseBytes, ReadsBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_bytes("8GiB"), 8 * kGiB);
  EXPECT_EQ(parse_bytes("8 GiB"), 8 * kGiB);
  EXPECT_EQ(parse_bytes("8G"), 8 * kGiB);
  EXPECT_EQ(parse_bytes("8Gi"), 8 * kGiB);
  EXPECT_EQ(parse_bytes("8GB"), 8000000000ULL);
  EXPECT_EQ(parse_bytes("512MiB"), 512 * kMiB);
  EXPECT_EQ(parse_bytes("1.5G"), 3 * kGiB / 2);
  EXPECT_EQ(parse_bytes("4096"), 4096U);
  EXPECT_EQ(parse_bytes("0"), 0U);
}

TEST(ParseBytes, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "GiB", "8 gigabytes", "-1G", "+1G", "1.5", "8GiBx", "1e30T", "nan"})
    EXPECT_FALSE(parse_bytes(bad).has_value()) << bad;
}

TEST(Join, SeparatesWordsAndGivesNothingForNone) {
  EXPECT_EQ(gputrain::core::join({"npy", "npz", "csv"}), "npy, npz, csv");
  EXPECT_EQ(gputrain::core::join({"a", "b"}, " | "), "a | b");
  EXPECT_EQ(gputrain::core::join({"only"}), "only");
  EXPECT_EQ(gputrain::core::join({}), "");
  EXPECT_EQ(gputrain::core::join_first({"a", "b", "c"}, 2), "a, b, ... (3 in all)");
  EXPECT_EQ(gputrain::core::join_first({"a", "b"}, 2), "a, b");
  EXPECT_EQ(gputrain::core::join_first({"a", "b", "c"}, 1, "', '"), "a', '... (3 in all)");
}

TEST(Join, SomeWordsThenHowManyMore) {
  EXPECT_EQ(gputrain::core::join_some({"a", "b", "c", "d"}, 2), "a, b and 2 more");
  EXPECT_EQ(gputrain::core::join_some({"a", "b"}, 2), "a, b");
  EXPECT_EQ(gputrain::core::join_some({"a", "b", "c"}, 0), "3 more");
  EXPECT_EQ(gputrain::core::join_some({}, 3), "");
}

TEST(Counted, PutsTheNounInThePluralExceptForOne) {
  EXPECT_EQ(gputrain::core::counted(1, "bucket"), "1 bucket");
  EXPECT_EQ(gputrain::core::counted(0, "GPU"), "0 GPUs");
  EXPECT_EQ(gputrain::core::counted(8, "GPU"), "8 GPUs");
  EXPECT_EQ(gputrain::core::counted(2, "class"), "2 classes");
  EXPECT_EQ(gputrain::core::counted(3, "batch"), "3 batches");
  EXPECT_EQ(gputrain::core::counted(1, "class"), "1 class");
  EXPECT_EQ(gputrain::core::counted(3, "epoch"), "3 epochs");
}
