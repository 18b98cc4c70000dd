#pragma once
// Does this LibTorch build carry kernels for a GPU? A card newer than the build's arch list runs
// nothing ("no kernel image is available for execution on the device").

#include <string>
#include <vector>

namespace gputrain::checks {

/// Code targets in an nvcc flag list, e.g. "-gencode;arch=compute_90,code=sm_90" -> {"sm_90"}.
/// "sm_XY" is machine code, "compute_XY" is PTX the driver can compile for newer cards.
std::vector<std::string> parse_arch_flags(const std::string& flags);

/// The targets compiled into the loaded LibTorch (empty when it cannot tell, e.g. no driver).
std::vector<std::string> torch_cuda_arch_list();

/// True when a GPU of compute capability major.minor can run code built for `targets`:
/// sm_XY runs on the same major with minor >= Y (sm_XYa only on exactly X.Y); compute_XY (PTX)
/// is compiled by the driver for any capability >= X.Y.
bool targets_cover(const std::vector<std::string>& targets, int major, int minor);

}  // namespace gputrain::checks
