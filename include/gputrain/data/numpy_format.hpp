#pragma once
// NumPy's .npy (format versions 1, 2 and 3) and .npz (a zip of .npy files, stored or deflated),
// read as written by numpy.save / numpy.savez / numpy.savez_compressed.

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace gputrain::data {

/// One .npy file as a CPU tensor: memory-mapped when it is C-ordered and little-endian (no copy),
/// else read, byte-swapped and/or transposed to C order. bool, int8-64, uint8-64, float16/32/64
/// and complex64/128; uint16 and uint32 widen to int32 and int64 (LibTorch's arithmetic lacks
/// them), uint64 becomes int64 when every value fits. Throws UsageError naming the file and what
/// is wrong for a truncated or malformed file or an unsupported dtype.
at::Tensor read_npy(const std::string& path);

/// Every array of an .npz file, by key (the name without ".npy"), in the archive's order.
std::vector<std::pair<std::string, at::Tensor>> read_npz(const std::string& path);

}  // namespace gputrain::data
