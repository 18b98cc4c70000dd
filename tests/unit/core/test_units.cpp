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
