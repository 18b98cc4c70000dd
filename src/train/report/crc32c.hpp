#pragma once
// CRC-32C (Castagnoli), the checksum of TensorBoard's record format. Debian 12 packages no
// crc32c library, and this is one table and one loop (tested against the RFC 3720 vectors).

#include <cstdint>
#include <string_view>

namespace gputrain::train {

std::uint32_t crc32c(std::string_view bytes);

/// TFRecord's "masked" CRC: rotated and offset so CRCs of CRCs stay well distributed.
inline std::uint32_t masked_crc32c(std::string_view bytes) {
  const std::uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace gputrain::train
