#include "gputrain/device/runtime_libraries.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>

#include "shared_library.hpp"

namespace gputrain::device {
namespace {

// major*10000 + minor*100 + patch, as cuDNN, NCCL and cuBLASLt report themselves.
std::string format_mmp(long version) {
  return std::to_string(version / 10000) + "." + std::to_string((version % 10000) / 100) + "." + std::to_string(version % 100);
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

std::string format_cuda_version(int version) { return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10); }

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

const std::vector<std::string>& cuda_library_families() {
  static const std::vector<std::string> kFamilies = {"libcudart",   "libcublas", "libcublasLt", "libcudnn",    "libnccl",     "libnvrtc",
                                                     "libcusparse", "libcufft",  "libcurand",   "libcusolver", "libnvJitLink"};
  return kFamilies;
}

std::vector<LoadedCopies> group_library_copies(const std::vector<std::string>& mapped_paths, const std::vector<std::string>& families) {
  std::map<std::string, LoadedCopies> by_family;
  for (const auto& path : mapped_paths) {
    const std::string file = std::filesystem::path(path).filename().string();
    const auto so = file.find(".so");
    if (so == std::string::npos) continue;
    std::string family = file.substr(0, so);
    if (std::find(families.begin(), families.end(), family) == families.end()) {
      const auto underscore = family.find('_');  // libcudnn_graph -> libcudnn
      if (underscore == std::string::npos) continue;
      family = family.substr(0, underscore);
      if (std::find(families.begin(), families.end(), family) == families.end()) continue;
    }
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(path, ec);
    const std::string key = ec ? path : canonical.string();
    const std::string folder = std::filesystem::path(key).parent_path().string();
    auto& copies = by_family[family];
    if (std::find(copies.paths.begin(), copies.paths.end(), key) == copies.paths.end()) copies.paths.push_back(key);
    if (std::find(copies.folders.begin(), copies.folders.end(), folder) == copies.folders.end()) {
      copies.folders.push_back(folder);
    }
  }
  std::vector<LoadedCopies> result;
  for (const auto& family : families) {
    LoadedCopies copies = by_family[family];
    copies.library = family;
    result.push_back(std::move(copies));
  }
  return result;
}

std::vector<LoadedCopies> loaded_cuda_library_copies() {
  std::vector<std::string> mapped;
  dl_iterate_phdr(collect_path, &mapped);
  return group_library_copies(mapped, cuda_library_families());
}

std::vector<std::string> anchor_cuda_folders(const std::vector<LoadedCopies>& copies) {
  static const std::vector<std::string> kAnchors = {"libcudart", "libcublas", "libcublasLt", "libcudnn", "libnccl"};
  std::vector<std::string> folders;
  for (const auto& family : copies) {
    for (const auto& path : family.paths) {
      const std::string file = std::filesystem::path(path).filename().string();
      const std::string stem = file.substr(0, file.find(".so"));
      if (std::find(kAnchors.begin(), kAnchors.end(), stem) == kAnchors.end()) continue;
      const std::string folder = std::filesystem::path(path).parent_path().string();
      if (std::find(folders.begin(), folders.end(), folder) == folders.end()) folders.push_back(folder);
    }
  }
  return folders;
}

std::vector<std::string> foreign_cuda_files(const std::vector<LoadedCopies>& copies) {
  const auto anchors = anchor_cuda_folders(copies);
  std::vector<std::string> foreign;
  if (anchors.empty()) return foreign;
  for (const auto& family : copies) {
    for (const auto& path : family.paths) {
      const std::string folder = std::filesystem::path(path).parent_path().string();
      if (std::find(anchors.begin(), anchors.end(), folder) == anchors.end()) foreign.push_back(path);
    }
  }
  return foreign;
}

std::vector<std::string> rival_cuda_library_folders(const std::string& ld_library_path, const std::vector<std::string>& our_folders) {
  namespace fs = std::filesystem;
  static const std::vector<std::string> kSonames = {"libcudart.so.13",     "libcublas.so.13",   "libcublasLt.so.13", "libcudnn.so.9",
                                                    "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libnccl.so.2",      "libnvrtc.so.13"};
  std::vector<std::string> rivals;
  std::size_t start = 0;
  while (start <= ld_library_path.size()) {
    const auto end = ld_library_path.find(':', start);
    const std::string entry = ld_library_path.substr(start, end - start);
    std::error_code ec;
    const fs::path dir = entry.empty() ? fs::path() : fs::canonical(entry, ec);
    if (!entry.empty() && !ec) {
      const bool ours = std::find(our_folders.begin(), our_folders.end(), dir.string()) != our_folders.end();
      const bool holds = std::any_of(kSonames.begin(), kSonames.end(), [&](const std::string& so) { return fs::exists(dir / so, ec); });
      if (!ours && holds) rivals.push_back(entry);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return rivals;
}

void reexec_without_rival_cuda_folders(char** argv) {
  const char* search = std::getenv("LD_LIBRARY_PATH");
  if (search == nullptr || *search == '\0' || std::getenv("GPUTRAIN_KEEP_LD_LIBRARY_PATH") != nullptr) return;
  if (std::getenv("GPUTRAIN_REEXECUTED") != nullptr) return;  // once is enough
  const std::vector<std::string> ours = anchor_cuda_folders(loaded_cuda_library_copies());
  if (ours.empty()) return;  // no CUDA library loaded: nothing can clash
  const auto rivals = rival_cuda_library_folders(search, ours);
  if (rivals.empty()) return;
  std::string kept, entry;
  std::istringstream entries(search);
  while (std::getline(entries, entry, ':')) {
    if (std::find(rivals.begin(), rivals.end(), entry) == rivals.end()) kept += (kept.empty() ? "" : ":") + entry;
  }
  setenv("LD_LIBRARY_PATH", kept.c_str(), 1);
  setenv("GPUTRAIN_REEXECUTED", "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed: carry on; libraries.single_copy will report the clash.
}

}  // namespace gputrain::device
