#pragma once
// LibTorch computes little with uint16/32/64 (no sum, no comparison on the CPU), and PyTorch users
// save them anyway (16-bit images, ids): the readers of npy and safetensors widen them on arrival.

#include <ATen/core/Tensor.h>

#include <string>

namespace gputrain::data {

/// True for the unsigned types wider than a byte, which widen_unsigned converts.
bool is_wide_unsigned(at::ScalarType type);

/// uint16 as int32, uint32 and uint64 as int64, any other tensor as it is. A uint64 above 2^63-1
/// is refused, naming `what` (e.g. "'x.npy'").
at::Tensor widen_unsigned(const at::Tensor& t, const std::string& what);

}  // namespace gputrain::data
