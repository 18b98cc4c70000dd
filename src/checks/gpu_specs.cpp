#include "gputrain/checks/gpu_specs.hpp"

#include <array>

namespace gputrain::checks {
namespace {

// Ordered most specific first: "H100 PCIe" and "H100 NVL" before the SXM's "H100 80GB HBM3".
constexpr std::array<GpuSpec, 15> kSpecs = {{
    {"H200", 67, 494.7, 989.4, 989.4, 4800},
    {"H100 PCIe", 51, 378, 756, 756, 2000},
    {"H100 NVL", 60, 417.5, 835, 835, 3900},
    {"H100", 67, 494.7, 989.4, 989.4, 3350},  // SXM5: "NVIDIA H100 80GB HBM3"
    {"A100-SXM4-80GB", 19.5, 156, 312, 312, 2039},
    {"A100 80GB PCIe", 19.5, 156, 312, 312, 1935},
    {"A100-SXM4-40GB", 19.5, 156, 312, 312, 1555},
    {"A100-PCIE-40GB", 19.5, 156, 312, 312, 1555},
    {"L40S", 91.6, 183, 366, 366, 864},
    {"L4", 30.3, 60, 121, 121, 300},
    {"A10", 31.2, 62.5, 125, 125, 600},
    {"T4", 8.1, 0, 0, 65, 320},
    {"RTX 4090", 82.6, 82.6, 165.2, 165.2, 1008},
    {"RTX 3090", 35.6, 35.6, 71, 71, 936},
    {"RTX A6000", 38.7, 77.4, 154.8, 154.8, 768},
}};

}  // namespace

std::optional<GpuSpec> find_gpu_spec(std::string_view gpu_name) {
  for (const auto& spec : kSpecs) {
    if (gpu_name.find(spec.model) != std::string_view::npos) return spec;
  }
  return std::nullopt;
}

double pcie_bandwidth_gbps(int generation, int width) {
  // GT/s per lane and encoding: gen1/2 8b/10b, gen3+ 128b/130b (gen6 FLIT, ~242/256).
  double per_lane = 0;
  switch (generation) {
    case 1:
      per_lane = 2.5 * 0.8 / 8;
      break;
    case 2:
      per_lane = 5.0 * 0.8 / 8;
      break;
    case 3:
      per_lane = 8.0 * 128 / 130 / 8;
      break;
    case 4:
      per_lane = 16.0 * 128 / 130 / 8;
      break;
    case 5:
      per_lane = 32.0 * 128 / 130 / 8;
      break;
    case 6:
      per_lane = 64.0 * 242 / 256 / 8;
      break;
    default:
      return 0;
  }
  return per_lane * width;
}

}  // namespace gputrain::checks
