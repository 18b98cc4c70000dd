#pragma once
// The CUDA libraries this process uses (cudart, cuBLAS, cuBLASLt, cuDNN, NCCL): the versions and
// files actually loaded, and a check that exactly one copy of each is mapped (the torch wheel and a
// system toolkit ship the same sonames; two copies means undefined behaviour).

#include <string>
#include <vector>

namespace gputrain::device {

/// One CUDA library as found by the loader.
struct RuntimeLibrary {
  std::string name;         ///< "cudart", "cublas", "cublasLt", "cudnn", "nccl"
  std::string soname;       ///< e.g. "libcudnn.so.9"
  bool available = false;   ///< it could be loaded (or was already)
  std::string version;      ///< reported by the library itself, e.g. "9.19.0"
  std::string path;         ///< the file the loader picked
  std::string error;        ///< why it is not available
};

/// Asks each library for its version; reuses a copy the process already has (e.g. LibTorch's),
/// else loads it the way LibTorch would (through our RUNPATH, wheel folders first).
std::vector<RuntimeLibrary> probe_runtime_libraries();

/// The distinct files mapped in this process for one library name (e.g. "libcudart.so").
struct LoadedCopies {
  std::string library;
  std::vector<std::string> paths;  ///< canonical paths; more than one is a conflict
};

/// For each CUDA library above, the files currently mapped into this process.
std::vector<LoadedCopies> loaded_cuda_library_copies();

/// Groups mapped object paths by library (prefix before ".so"), keeping only `libraries`; exposed
/// for tests. Paths are made canonical so a symlinked path does not count as a second copy.
std::vector<LoadedCopies> group_library_copies(const std::vector<std::string>& mapped_paths,
                                               const std::vector<std::string>& libraries);

/// CUDA-style integer versions to text: 13000 -> "13.0" (runtime/driver API).
std::string format_cuda_version(int version);

}  // namespace gputrain::device
