// libraries.*: LibTorch works, cuDNN/NCCL/cuBLAS/cudart load with known versions, one copy each.
#include <torch/version.h>

#include <ATen/ATen.h>

#include "check_sets.hpp"

namespace gputrain::checks {
namespace {

Result check_library(const Context& c, const std::string& name) {
  for (const auto& library : c.libraries) {
    if (library.name != name) continue;
    if (!library.available) {
      return fail(library.soname + " cannot be loaded: " + library.error,
                  "reinstall the torch wheel (scripts/bootstrap.sh) or point LD_LIBRARY_PATH at a folder holding " + library.soname);
    }
    return pass(name + " " + (library.version.empty() ? "(version unknown)" : library.version) + " from " + library.path);
  }
  return skip(name + " was not probed");
}

Result check_single_copy(const Context&) {
  const auto copies = device::loaded_cuda_library_copies();
  std::string loaded, conflicts;
  for (const auto& family : copies) {
    if (family.paths.empty()) continue;
    loaded += (loaded.empty() ? "" : ", ") + family.library;
    if (family.folders.size() > 1) {
      conflicts += (conflicts.empty() ? "" : "; ") + family.library + " from ";
      for (std::size_t i = 0; i < family.folders.size(); ++i) conflicts += (i ? " and " : "") + family.folders[i];
    }
  }
  for (const auto& file : device::foreign_cuda_files(copies)) {
    conflicts += (conflicts.empty() ? "" : "; ") + file + " is not from the CUDA build LibTorch uses";
  }
  if (!conflicts.empty()) {
    return fail("two CUDA builds are mixed in this process: " + conflicts,
                "remove the other CUDA folders from LD_LIBRARY_PATH/LD_PRELOAD so only the torch wheel's copies load");
  }
  return pass("each CUDA library loaded once, all from LibTorch's CUDA build (" + loaded + ")");
}

Result check_libtorch(const Context&) {
  // [[0,1],[2,3]]^2 = [[2,3],[6,11]]: trace 13. A tiny CPU product proves the kernels run.
  const at::Tensor a = at::arange(4, at::kFloat).reshape({2, 2});
  const float trace = at::matmul(a, a).trace().item<float>();
  if (trace != 13.0f) {
    return fail("LibTorch computed a wrong CPU result (" + std::to_string(trace) + " instead of 13)",
                "reinstall the torch wheel (scripts/bootstrap.sh)");
  }
  return pass(std::string("LibTorch ") + TORCH_VERSION + " loaded; CPU kernels run");
}

}  // namespace

std::vector<Check> library_checks() {
  auto library = [](const std::string& name) { return [name](const Context& c) { return check_library(c, name); }; };
  return {
      {"libraries.libtorch", "libraries", "LibTorch loads and runs", std::chrono::seconds(10), check_libtorch},
      {"libraries.cudart", "libraries", "CUDA runtime", std::chrono::seconds(2), library("cudart")},
      {"libraries.cublas", "libraries", "cuBLAS", std::chrono::seconds(2), library("cublas")},
      {"libraries.cudnn", "libraries", "cuDNN", std::chrono::seconds(2), library("cudnn")},
      {"libraries.nccl", "libraries", "NCCL", std::chrono::seconds(2), library("nccl")},
      {"libraries.single_copy", "libraries", "one copy of each CUDA library, one CUDA build", std::chrono::seconds(2), check_single_copy},
  };
}

}  // namespace gputrain::checks
