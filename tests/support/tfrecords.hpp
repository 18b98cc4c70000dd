#pragma once
// The events of a TensorBoard file, read as TensorBoard reads them: TFRecords (uint64 length,
// masked CRC-32C of it, the event, masked CRC-32C of that). A frame or checksum that is wrong ends
// the reading, as it ends TensorBoard's, with `whole` false.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "train/report/crc32c.hpp"  // private: the checksum the writer uses

namespace gputrain::test_support {

struct TfRecords {
  std::vector<std::string> events;
  bool whole = true;  ///< every byte of the file was in a framed record with valid checksums
};

inline TfRecords read_tfrecords(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  TfRecords out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::uint64_t length = 0;
    std::uint32_t length_crc = 0, data_crc = 0;
    if (at + 12 > bytes.size()) break;
    std::memcpy(&length, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    if (length_crc != train::masked_crc32c(std::string_view(bytes.data() + at, 8))) break;
    if (length > bytes.size() - at - 16) break;
    std::memcpy(&data_crc, bytes.data() + at + 12 + length, 4);
    const std::string_view event(bytes.data() + at + 12, length);
    if (data_crc != train::masked_crc32c(event)) break;
    out.events.emplace_back(event);
    at += 16 + length;
  }
  out.whole = at == bytes.size();
  return out;
}

}  // namespace gputrain::test_support
