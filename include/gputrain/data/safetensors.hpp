#pragma once
// The safetensors format (a JSON header of names, dtypes, shapes and offsets, then raw
// little-endian data): what Python's `safetensors` package reads and writes.

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gputrain::data {

/// The __metadata__ key that holds a CRC-32 (zlib's, 8 hex digits) of the file's other metadata,
/// its tensors' names, dtypes, shapes and offsets, and its data.
inline constexpr const char* kCrc32Key = "crc32";

/// Writes `tensors` (any device; copied to CPU, made contiguous) to `path` atomically, with
/// `metadata` and the CRC-32 under kCrc32Key. Metadata text that is not UTF-8 is written read as
/// Windows-1252 (the header is JSON).
/// Supported dtypes: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// Every tensor of a safetensors file, as CPU tensors that view a read-only memory map of it (copied
/// only when a tensor's data is misaligned): pages are read as they are touched. `metadata`, when
/// given, receives the header's __metadata__ (string keys and values). Throws UsageError for a
/// missing, truncated or malformed file, naming what is wrong, and for one whose data no longer
/// matches the CRC-32 its writer recorded under kCrc32Key (reading every page to check it).
std::vector<std::pair<std::string, at::Tensor>> read_safetensors(const std::string& path,
                                                                 std::map<std::string, std::string>* metadata = nullptr);

/// Whether `path` begins as a safetensors file does (an 8-byte little-endian header length that fits
/// the file, then the JSON header's '{'), read from its first 9 bytes: tells weights from a config
/// or log given in their place without reading them. Never throws.
bool starts_like_safetensors(const std::string& path);

}  // namespace gputrain::data
