#pragma once
// Tensor options the GPU checks share.

#include <ATen/ATen.h>

namespace gputrain::checks {

/// Options for a tensor of `dtype` on CUDA device `index`.
inline at::TensorOptions on_gpu(int index, at::ScalarType dtype = at::kFloat) {
  return at::TensorOptions().dtype(dtype).device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace gputrain::checks
