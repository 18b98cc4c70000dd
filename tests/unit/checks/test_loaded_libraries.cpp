// In a process linked with LibTorch (as every gputrain command that trains is), exactly one copy
// of each CUDA library is mapped, and it is the copy the version probe reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "gputrain/device/runtime_libraries.hpp"

using namespace gputrain::device;

TEST(LoadedLibraries, ExactlyOneCopyOfEachCudaLibraryWithLibTorchLoaded) {
  const auto probed = probe_runtime_libraries();
  for (const auto& copies : loaded_cuda_library_copies()) {
    EXPECT_LE(copies.folders.size(), 1u) << copies.library << " is mapped from " << copies.folders.size() << " folders";
  }
  EXPECT_TRUE(foreign_cuda_files(loaded_cuda_library_copies()).empty());
  for (const auto& library : probed) {
    ASSERT_TRUE(library.available) << library.soname << ": " << library.error;
    EXPECT_FALSE(library.version.empty()) << library.name;
  }
}

TEST(LoadedLibraries, TheProbeReportsTheMappedFile) {
  const auto probed = probe_runtime_libraries();
  const auto copies = loaded_cuda_library_copies();
  for (const auto& library : probed) {
    if (library.name != "cudnn") continue;
    const auto mapped = std::find_if(copies.begin(), copies.end(), [](const LoadedCopies& c) { return c.library == "libcudnn"; });
    ASSERT_NE(mapped, copies.end());
    const std::string file = std::filesystem::canonical(library.path).string();
    EXPECT_NE(std::find(mapped->paths.begin(), mapped->paths.end(), file), mapped->paths.end()) << file;
  }
}

TEST(LoadedLibraries, ProbedPathsNameTheFolderWithoutDotDotSegments) {
  // LibTorch's RUNPATH reaches the wheel's CUDA folders as torch/lib/../../nvidia/...; users should
  // read the folder itself in verify's lines.
  for (const auto& library : probe_runtime_libraries()) {
    if (!library.available) continue;
    for (const auto& part : std::filesystem::path(library.path)) {
      EXPECT_NE(part, "..") << library.path;
    }
  }
}
