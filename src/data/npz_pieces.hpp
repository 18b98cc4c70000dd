#pragma once
// An .npz archive read member by member in pieces: libzip 1.7 (Debian's) returns wrong bytes from
// one zip_fread of 4 GiB or more of a deflated member (zlib's 32-bit avail_out wraps round), and
// the CRC check then refuses a sound file as corrupt.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gputrain::data {

constexpr std::uint64_t kZipReadPiece = 1ULL << 30;  ///< read_npz's pieces: 1 GiB

/// read_npz, reading each member `piece_bytes` at a time (tests use small pieces).
std::vector<std::pair<std::string, at::Tensor>> read_npz_in_pieces(const std::string& path, std::uint64_t piece_bytes);

}  // namespace gputrain::data
