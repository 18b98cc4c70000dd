#pragma once
// What this build of gputrain is and what it was built against (filled in by CMake).

#include <string_view>

namespace gputrain::core {

/// Facts fixed at build time; the libraries actually loaded are in device/runtime_libraries.hpp.
struct BuildInfo {
  std::string_view gputrain_version;      ///< e.g. "0.1.0"
  std::string_view torch_version;         ///< LibTorch the build compiled and linked against
  std::string_view torch_cuda_version;    ///< CUDA version that LibTorch was built for, or "unknown"
  std::string_view cuda_toolkit_version;  ///< CUDA toolkit whose headers gputrain was compiled with
  std::string_view compiler;              ///< compiler id and version
  std::string_view build_type;            ///< CMake build type
};

/// The facts of this build.
const BuildInfo& build_info();

}  // namespace gputrain::core
