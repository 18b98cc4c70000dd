#pragma once
// Datasheet figures of common GPUs, so measured figures can be read against what the card can do.

#include <optional>
#include <string_view>

namespace gputrain::checks {

/// Dense (no sparsity) peak throughput and memory bandwidth from NVIDIA's datasheets.
struct GpuSpec {
  std::string_view model;            ///< a substring of the driver's name, e.g. "H100 PCIe"
  double fp32_tflops = 0;            ///< CUDA cores, no tensor cores
  double tf32_tflops = 0;            ///< 0 where the card has no TF32 tensor cores
  double bf16_tflops = 0;            ///< 0 where the card has no BF16 tensor cores
  double fp16_tflops = 0;            ///< tensor cores, FP32 accumulate
  double memory_bandwidth_gbps = 0;  ///< GB/s (10^9 bytes)
};

/// The spec whose model string the driver's name contains (most specific first), if known.
std::optional<GpuSpec> find_gpu_spec(std::string_view gpu_name);

/// Theoretical one-direction PCIe bandwidth in GB/s after line encoding, e.g. gen 4 x16 -> 31.5.
double pcie_bandwidth_gbps(int generation, int width);

}  // namespace gputrain::checks
