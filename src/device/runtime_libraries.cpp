#include "gputrain/device/runtime_libraries.hpp"

#include <link.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "shared_library.hpp"

namespace gputrain::device {
namespace {

// major*10000 + minor*100 + patch, as cuDNN, NCCL and cuBLASLt report themselves.
std::string format_mmp(long version) {
  return std::to_string(version / 10000) + "." + std::to_string((version % 10000) / 100) + "." +
         std::to_string(version % 100);
}

struct Probe {
  const char* name;
  const char* soname;
  std::function<std::string(const SharedLibrary&)> version;
};

const std::vector<Probe>& probes() {
  static const std::vector<Probe> kProbes = {
      {"cudart", "libcudart.so.13",
       [](const SharedLibrary& lib) -> std::string {
         auto fn = lib.symbol<int (*)(int*)>("cudaRuntimeGetVersion");
         int v = 0;
         return fn != nullptr && fn(&v) == 0 ? format_cuda_version(v) : "";
       }},
      {"cublas", "libcublas.so.13",
       [](const SharedLibrary& lib) -> std::string {
         auto fn = lib.symbol<int (*)(int, int*)>("cublasGetProperty");  // MAJOR=0, MINOR=1, PATCH=2
         int major = 0, minor = 0, patch = 0;
         if (fn == nullptr || fn(0, &major) != 0 || fn(1, &minor) != 0 || fn(2, &patch) != 0) return "";
         return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
       }},
      {"cublasLt", "libcublasLt.so.13",
       [](const SharedLibrary& lib) -> std::string {
         auto fn = lib.symbol<size_t (*)()>("cublasLtGetVersion");
         return fn != nullptr ? format_mmp(long(fn())) : "";
       }},
      {"cudnn", "libcudnn.so.9",
       [](const SharedLibrary& lib) -> std::string {
         auto fn = lib.symbol<size_t (*)()>("cudnnGetVersion");
         return fn != nullptr ? format_mmp(long(fn())) : "";
       }},
      {"nccl", "libnccl.so.2",
       [](const SharedLibrary& lib) -> std::string {
         auto fn = lib.symbol<int (*)(int*)>("ncclGetVersion");
         int v = 0;
         return fn != nullptr && fn(&v) == 0 ? format_mmp(v) : "";
       }},
  };
  return kProbes;
}

int collect_path(dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
    static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
  }
  return 0;
}

}  // namespace

std::string format_cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::vector<RuntimeLibrary> probe_runtime_libraries() {
  std::vector<RuntimeLibrary> found;
  for (const auto& probe : probes()) {
    RuntimeLibrary library{probe.name, probe.soname, false, "", "", ""};
    SharedLibrary loaded(probe.soname, SharedLibrary::Mode::already_loaded);
    const SharedLibrary* use = &loaded;
    std::unique_ptr<SharedLibrary> fresh;
    if (!loaded.is_open()) {
      fresh = std::make_unique<SharedLibrary>(probe.soname, SharedLibrary::Mode::load);
      use = fresh.get();
    }
    if (use->is_open()) {
      library.available = true;
      library.path = use->path();
      library.version = probe.version(*use);
    } else {
      library.error = use->error();
    }
    found.push_back(std::move(library));
  }
  return found;
}

std::vector<LoadedCopies> group_library_copies(const std::vector<std::string>& mapped_paths,
                                               const std::vector<std::string>& libraries) {
  std::map<std::string, std::vector<std::string>> by_library;
  for (const auto& path : mapped_paths) {
    const std::string file = std::filesystem::path(path).filename().string();
    const auto so = file.find(".so");
    if (so == std::string::npos) continue;
    const std::string library = file.substr(0, so + 3);
    if (std::find(libraries.begin(), libraries.end(), library) == libraries.end()) continue;
    std::error_code ec;
    auto canonical = std::filesystem::canonical(path, ec);
    const std::string key = ec ? path : canonical.string();
    auto& paths = by_library[library];
    if (std::find(paths.begin(), paths.end(), key) == paths.end()) paths.push_back(key);
  }
  std::vector<LoadedCopies> result;
  for (const auto& library : libraries) result.push_back({library, by_library[library]});
  return result;
}

std::vector<LoadedCopies> loaded_cuda_library_copies() {
  std::vector<std::string> mapped;
  dl_iterate_phdr(collect_path, &mapped);
  return group_library_copies(mapped, {"libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libnccl.so"});
}

}  // namespace gputrain::device
