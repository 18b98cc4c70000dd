#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gputrain/train/tensorboard_writer.hpp"
#include "support/tfrecords.hpp"
#include "train/report/crc32c.hpp"

using namespace gputrain::train;

// RFC 3720, B.4.
TEST(Crc32c, MatchesTheStandardVectors) {
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
}

TEST(TensorBoardWriter, WritesFramedRecordsWithValidChecksums) {
  const auto dir = std::filesystem::temp_directory_path() / "gputrain-tb";
  std::filesystem::remove_all(dir);
  std::string path;
  {
    TensorBoardWriter writer(dir.string());
    writer.add_scalar("train/loss", 0.5, 1);
    writer.add_scalar("train/loss", 0.25, 2);
    path = writer.path();
  }
  const auto records = gputrain::test_support::read_tfrecords(path);
  EXPECT_TRUE(records.whole);
  ASSERT_EQ(records.events.size(), 3u);  // the file_version event, then two scalars
  EXPECT_NE(records.events[0].find("brain.Event:2"), std::string::npos);
  EXPECT_NE(records.events[1].find("train/loss"), std::string::npos);
  EXPECT_NE(records.events[2].find("train/loss"), std::string::npos);
}
