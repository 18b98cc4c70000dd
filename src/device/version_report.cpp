// What `gputrain --version` prints: gputrain's build, LibTorch, and the CUDA libraries and driver
// this process would load, each with its version and file.
#include "gputrain/device/version_report.hpp"

#include <sstream>

#include "gputrain/core/build_info.hpp"
#include "gputrain/device/gpu_info.hpp"
#include "gputrain/device/runtime_libraries.hpp"

namespace gputrain::device {

std::string version_report() {
  std::ostringstream out;
  const auto& build = core::build_info();
  out << "gputrain       " << build.gputrain_version << " (" << build.build_type << ", " << build.compiler << ")\n";
  out << "LibTorch       " << build.torch_version << " (built for CUDA " << build.torch_cuda_version << ")\n";
  const auto driver = probe_driver();
  const auto libraries = probe_runtime_libraries();
  for (const auto& library : libraries) {
    std::string label = library.name == "cudart" ? "CUDA runtime" : library.name;
    label.resize(14, ' ');
    out << label << " ";
    if (!library.available) {
      out << "not loadable (" << library.error << ")\n";
      continue;
    }
    out << (library.version.empty() ? "?" : library.version) << "  " << library.path;
    if (library.name == "cudart") out << "  (gputrain compiled with toolkit " << build.cuda_toolkit_version << ")";
    out << "\n";
  }
  out << "NVIDIA driver  ";
  if (!driver.cuda_loaded) {
    out << "none: " << driver.cuda_error << "\n";
  } else {
    out << (driver.driver_version.empty() ? "version unknown" : driver.driver_version) << ", supports CUDA up to "
        << format_cuda_version(driver.cuda_driver_api_version) << " (nvidia-smi's \"CUDA Version\")\n";
  }
  return out.str();
}

}  // namespace gputrain::device
