#pragma once
// `gputrain --version`'s lines.

#include <string>

namespace gputrain::device {

/// gputrain's version and build, the LibTorch it was built against, then for the CUDA runtime,
/// cuBLAS, cuBLASLt, cuDNN and NCCL the version and file this process loads, and the NVIDIA
/// driver's version with the newest CUDA it supports; one line each. Never throws.
std::string version_report();

}  // namespace gputrain::device
