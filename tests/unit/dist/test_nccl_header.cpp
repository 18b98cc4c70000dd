// The nccl.h that src/dist/nccl_communicator.cpp was compiled with belongs to the NCCL library
// this process loads through LibTorch: ProcessGroupNCCL::Options embeds ncclConfig_t, so a header
// of another NCCL version would lay it out differently and corrupt memory without a word.
#include <gtest/gtest.h>

#include <link.h>
#include <nccl.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gputrain/dist/communicator.hpp"

namespace {

std::vector<std::string> loaded_nccl_copies() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("libnccl.so") != std::string::npos) static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &paths);
  return paths;
}

}  // namespace

TEST(NcclHeader, IsTheHeaderOfTheNcclLibTorchLoads) {
  ASSERT_TRUE(gputrain::dist::backend_available(gputrain::dist::Backend::nccl));
  int loaded = 0;
  ASSERT_EQ(ncclGetVersion(&loaded), ncclSuccess);
  EXPECT_EQ(loaded, NCCL_VERSION_CODE) << "nccl.h says " << NCCL_VERSION_CODE << ", the loaded library " << loaded;
  const auto copies = loaded_nccl_copies();
  ASSERT_EQ(copies.size(), 1U) << "more than one libnccl in the process";
  const auto header_lib = std::filesystem::canonical(std::filesystem::path(GPUTRAIN_NCCL_INCLUDE_DIR) / ".." / "lib");
  EXPECT_EQ(std::filesystem::canonical(copies[0]).parent_path(), header_lib);
}
