#pragma once
// The bytes an array's header promises, computed without overflow: a damaged or crafted header
// whose dimensions multiply past 64 bits would otherwise wrap round to a few bytes, pass the
// check against the file's length and make a tensor that promises memory the file does not have.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::data {

/// shape's product times `item`, or nullopt when a dimension is negative or the product, or the
/// element count as LibTorch's int64, would overflow. A zero dimension makes the array empty but
/// not its strides: LibTorch multiplies the other dimensions for them (counting 0 as 1), so a
/// (0, 2^40, 2^40) header is refused too, not left to LibTorch's "Stride calculation overflowed".
inline std::optional<std::size_t> array_bytes(const std::vector<std::int64_t>& shape, std::size_t item) {
  std::int64_t count = 1, stride = 1;
  for (const auto d : shape)
    if (d < 0 || __builtin_mul_overflow(count, d, &count) || __builtin_mul_overflow(stride, d > 0 ? d : 1, &stride)) return std::nullopt;
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(count), item, &bytes)) return std::nullopt;
  return bytes;
}

/// "(4294967296, 4294967296)": a shape as an error names it.
inline std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text;
  for (const auto d : shape) text += (text.empty() ? "" : ", ") + std::to_string(d);
  return "(" + text + ")";
}

}  // namespace gputrain::data
