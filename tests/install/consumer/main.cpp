// Links the installed library and calls into both of its parts.
#include <gputrain/checks/gpu_specs.hpp>
#include <gputrain/core/build_info.hpp>
#include <gputrain/device/select.hpp>

#include <iostream>

int main() {
  const auto inventory = gputrain::device::discover_gpus();
  const auto choice = gputrain::device::select_device("auto", inventory);
  const auto spec = gputrain::checks::find_gpu_spec("NVIDIA H100 PCIe");
  std::cout << "gputrain " << gputrain::core::build_info().gputrain_version << " device " << choice.str() << " h100pcie_bw "
            << (spec ? spec->memory_bandwidth_gbps : 0) << "\n";
  return spec ? 0 : 1;
}
