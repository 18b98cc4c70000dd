#include <gtest/gtest.h>

#include "gputrain/core/duration.hpp"

using gputrain::core::duration_text;
using gputrain::core::parse_duration;

TEST(ParseDuration, ReadsNumbersWithUnits) {
  EXPECT_EQ(parse_duration("90s"), 90.0);
  EXPECT_EQ(parse_duration("45m"), 2700.0);
  EXPECT_EQ(parse_duration("2h"), 7200.0);
  EXPECT_EQ(parse_duration("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration("1d 12h"), 129600.0);
  EXPECT_EQ(parse_duration("1d2h3m4s"), 93784.0);
  EXPECT_EQ(parse_duration("0.5s"), 0.5);
}

TEST(ParseDuration, ReadsTheClockFormsOfSlurmAndLightning) {
  EXPECT_EQ(parse_duration("2:30:00"), 9000.0);
  EXPECT_EQ(parse_duration("02:30:00"), 9000.0);
  EXPECT_EQ(parse_duration("1-12:00:00"), 129600.0);  // SLURM's D-HH:MM:SS
  EXPECT_EQ(parse_duration("00:12:00:00"), 43200.0);  // Lightning's DD:HH:MM:SS
  EXPECT_EQ(parse_duration("48:00:00"), 172800.0);    // hours past a day
}

TEST(ParseDuration, RefusesWhatIsAmbiguousOrNotADuration) {
  // A bare number is minutes to SLURM and seconds to others; "MM:SS" and "HH:MM" are read both ways too.
  for (const char* bad : {"", "30", "2:30", "h", "1x", "1h30", "30m1h", "1h1h", "-1h", "+1h", "1e3s", "1:60:00", "1:00:60", "1.5:00:00",
                          "1-2", "a-1:00:00", "1.5-1:00:00", "1:2:3:4:5", "1..5h"})
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
}

TEST(DurationText, WritesTheShortestFormThatReadsBack) {
  EXPECT_EQ(duration_text(5400), "1h30m");
  EXPECT_EQ(duration_text(86400), "1d");
  EXPECT_EQ(duration_text(93784), "1d2h3m4s");
  EXPECT_EQ(duration_text(45), "45s");
  EXPECT_EQ(duration_text(0.5), "0.5s");
  EXPECT_EQ(duration_text(0), "0s");
  for (double seconds : {1.0, 59.0, 61.0, 3599.0, 3601.0, 86399.0, 90061.0, 12.25})
    EXPECT_EQ(parse_duration(duration_text(seconds)), seconds) << duration_text(seconds);
}
