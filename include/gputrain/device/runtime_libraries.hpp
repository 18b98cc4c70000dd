#pragma once
// The CUDA libraries this process uses (cudart, cuBLAS, cuBLASLt, cuDNN, NCCL): the versions and
// files actually loaded, and a check that exactly one copy of each is mapped (the torch wheel and a
// system toolkit ship the same sonames; two copies means undefined behaviour).

#include <string>
#include <vector>

namespace gputrain::device {

/// One CUDA library as found by the loader.
struct RuntimeLibrary {
  std::string name;        ///< "cudart", "cublas", "cublasLt", "cudnn", "nccl"
  std::string soname;      ///< e.g. "libcudnn.so.9"
  bool available = false;  ///< it could be loaded (or was already)
  std::string version;     ///< reported by the library itself, e.g. "9.19.0"
  std::string path;        ///< the file the loader picked
  std::string error;       ///< why it is not available
};

/// Asks each library for its version; reuses a copy the process already has (e.g. LibTorch's),
/// else loads it the way LibTorch would (through our RUNPATH, wheel folders first).
std::vector<RuntimeLibrary> probe_runtime_libraries();

/// The files mapped in this process for one library family ("libcudnn" covers libcudnn.so.9 and
/// the libcudnn_graph/ops/cnn/... it loads): all must come from one folder, one file per soname.
struct LoadedCopies {
  std::string library;               ///< family, e.g. "libcudnn"
  std::vector<std::string> paths;    ///< canonical files mapped
  std::vector<std::string> folders;  ///< distinct folders of those files; more than one is a conflict
};

/// The CUDA library families we guard: libcudart, libcublas, libcublasLt, libcudnn, libnccl,
/// libnvrtc, libcusparse, libcufft, libcurand, libcusolver, libnvJitLink.
const std::vector<std::string>& cuda_library_families();

/// For each family, the files currently mapped into this process.
std::vector<LoadedCopies> loaded_cuda_library_copies();

/// Groups mapped object paths by family (the file name up to ".so", with a "_suffix" folded into
/// its family: libcudnn_graph -> libcudnn); exposed for tests. Paths are made canonical so a
/// symlinked path is not a second copy.
std::vector<LoadedCopies> group_library_copies(const std::vector<std::string>& mapped_paths, const std::vector<std::string>& families);

/// The folders of the libraries LibTorch links directly (libcudart, libcublas, libcublasLt,
/// libcudnn, libnccl; not their sub-libraries): found through RPATHs that outrank LD_LIBRARY_PATH,
/// they say which CUDA build this process uses. Every other CUDA library should come from them.
std::vector<std::string> anchor_cuda_folders(const std::vector<LoadedCopies>& copies);

/// Mapped CUDA-family files outside the anchor folders (a second build mixed in), e.g. a toolkit's
/// libnvJitLink or libcudnn_graph picked up through LD_LIBRARY_PATH.
std::vector<std::string> foreign_cuda_files(const std::vector<LoadedCopies>& copies);

/// Folders on `ld_library_path` that hold another build of a CUDA library we load (e.g. a toolkit's
/// /usr/local/cuda/lib64), i.e. that contain one of our sonames and are not among `our_folders`.
std::vector<std::string> rival_cuda_library_folders(const std::string& ld_library_path, const std::vector<std::string>& our_folders);

/// cuDNN dlopens its sub-libraries (libcudnn_graph.so.9, ...) by soname, already while LibTorch
/// loads, and its RUNPATH ranks below LD_LIBRARY_PATH: a toolkit folder there mixes two cuDNN
/// builds in one process. If LD_LIBRARY_PATH holds such rival folders, this re-executes the program
/// once without them (GPUTRAIN_KEEP_LD_LIBRARY_PATH=1 opts out). Returns when there is nothing to
/// do; on success it does not return.
void reexec_without_rival_cuda_folders(char** argv);

/// CUDA-style integer versions to text: 13000 -> "13.0" (runtime/driver API).
std::string format_cuda_version(int version);

}  // namespace gputrain::device
