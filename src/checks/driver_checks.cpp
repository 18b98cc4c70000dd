// driver.*: the NVIDIA driver is there, new enough for CUDA 13, and supports the runtime in use.
#include <string>

#include "check_sets.hpp"
#include "gputrain/device/runtime_libraries.hpp"

namespace gputrain::checks {
namespace {

constexpr int kMinDriverMajor = 580;  // the first branch with CUDA 13.0 support

const device::RuntimeLibrary* find_library(const Context& c, const std::string& name) {
  for (const auto& library : c.libraries) {
    if (library.name == name) return &library;
  }
  return nullptr;
}

Result check_present(const Context& c) {
  const auto& d = c.inventory.driver;
  if (c.discovery_timed_out) {
    return fail("the driver did not answer (cuInit/NVML hung)",
                "check `dmesg | grep -i -E 'nvrm|xid'`; reset the GPU (`nvidia-smi -r`) or reboot");
  }
  if (d.cuda_loaded) {
    return pass("NVIDIA driver " + (d.driver_version.empty() ? std::string("(version unknown)") : d.driver_version) + " loaded" +
                (d.nvml_loaded ? "" : "; NVML unavailable (" + d.nvml_error + "), some GPU facts are missing"));
  }
  const std::string detail = d.cuda_error;
  if (c.allow_cpu) return warn(detail + " (--allow-cpu: running on the CPU)", no_gpu_remedy(c));
  return fail(detail, no_gpu_remedy(c));
}

Result check_version(const Context& c) {
  const std::string& version = c.inventory.driver.driver_version;
  if (version.empty()) return skip("driver version unknown (no NVML, no /proc/driver/nvidia/version)");
  const int major = std::stoi(version.substr(0, version.find('.')));
  Figure figure{"driver_major", double(major), "", double(kMinDriverMajor)};
  if (major < kMinDriverMajor) {
    return fail("driver " + version + " is older than " + std::to_string(kMinDriverMajor) + ", the minimum for CUDA 13",
                "install driver " + std::to_string(kMinDriverMajor) +
                    " or newer (e.g. `sudo apt install nvidia-driver-580` or `cuda-drivers-580`), then reboot",
                {figure});
  }
  return pass("driver " + version + " >= " + std::to_string(kMinDriverMajor) + " (CUDA 13 minimum)", {figure});
}

Result check_cuda_compat(const Context& c) {
  const int supported = c.inventory.driver.cuda_driver_api_version;
  if (supported == 0) return skip("the CUDA driver API is not available");
  const auto* cudart = find_library(c, "cudart");
  const std::string max_text = device::format_cuda_version(supported);
  const std::string explain =
      "driver supports CUDA up to " + max_text + " (the \"CUDA Version\" nvidia-smi shows is this maximum, not the runtime in use)";
  if (cudart == nullptr || !cudart->available || cudart->version.empty()) {
    return fail(explain + "; the CUDA runtime library could not be loaded",
                "reinstall the torch wheel into .venv (scripts/bootstrap.sh) so libcudart.so.13 is present");
  }
  const std::string runtime = cudart->version;
  const int major = std::stoi(runtime.substr(0, runtime.find('.')));
  const int minor = std::stoi(runtime.substr(runtime.find('.') + 1));
  const int runtime_code = major * 1000 + minor * 10;
  std::vector<Figure> figures{{"driver_cuda_max", supported / 1000.0, "", {}}, {"runtime_cuda", runtime_code / 1000.0, "", {}}};
  if (supported < runtime_code) {
    return fail(explain + "; the runtime in use is CUDA " + runtime + " (" + cudart->path + ")",
                "upgrade the driver to one supporting CUDA " + runtime + " (580+ for CUDA 13.0)", figures);
  }
  return pass(explain + "; runtime in use: CUDA " + runtime, figures);
}

}  // namespace

std::vector<Check> driver_checks() {
  return {
      {"driver.present", "driver", "NVIDIA driver loaded", std::chrono::seconds(2), check_present},
      {"driver.version", "driver", "driver version for CUDA 13", std::chrono::seconds(2), check_version},
      {"driver.cuda_compat", "driver", "driver supports the CUDA runtime in use", std::chrono::seconds(2), check_cuda_compat},
  };
}

}  // namespace gputrain::checks
