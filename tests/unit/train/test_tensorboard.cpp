#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <sstream>

#include "train/crc32c.hpp"
#include "gputrain/train/tensorboard_writer.hpp"

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
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  std::size_t at = 0;
  int records = 0;
  while (at < bytes.size()) {
    ASSERT_LE(at + 12, bytes.size());
    std::uint64_t length;
    std::uint32_t length_crc, data_crc;
    std::memcpy(&length, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    EXPECT_EQ(length_crc, masked_crc32c(std::string_view(bytes.data() + at, 8)));
    ASSERT_LE(at + 12 + length + 4, bytes.size());
    std::memcpy(&data_crc, bytes.data() + at + 12 + length, 4);
    EXPECT_EQ(data_crc, masked_crc32c(std::string_view(bytes.data() + at + 12, length)));
    at += 12 + length + 4;
    ++records;
  }
  EXPECT_EQ(records, 3);  // the file_version event, then two scalars
  EXPECT_NE(bytes.find("brain.Event:2"), std::string::npos);
  EXPECT_NE(bytes.find("train/loss"), std::string::npos);
}
