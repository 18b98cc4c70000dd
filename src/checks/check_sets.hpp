#pragma once
// The verify checks by area (one file each); verify.cpp assembles them in report order.

#include <c10/core/ScalarType.h>

#include <vector>

#include "gputrain/checks/check.hpp"

namespace gputrain::checks {

std::vector<Check> system_checks();
std::vector<Check> driver_checks();
std::vector<Check> container_checks();
std::vector<Check> gpu_checks(const Context& context);
std::vector<Check> library_checks();
std::vector<Check> functional_checks(const Context& context);   // LibTorch
std::vector<Check> performance_checks(const Context& context);  // LibTorch

/// functional.N.batch_norm: gputrain's batch-norm kernels against ATen's, on GPU `index` in
/// `dtype` (bf16 or fp16); a skip where training would not use them (batch_norm_check.cpp).
Result check_batch_norm_kernels(int index, at::ScalarType dtype);

/// The remedy for "there is no usable GPU", tailored to host or container.
std::string no_gpu_remedy(const Context& context);

}  // namespace gputrain::checks
