#include <gtest/gtest.h>

#include "gputrain/device/runtime_libraries.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace gputrain::device;

TEST(LibraryCopies, GroupsByFamilyAndCountsFilesAndFolders) {
  const auto copies = group_library_copies(
      {"/venv/nvidia/cu13/lib/libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.13", "/venv/nvidia/cudnn/lib/libcudnn.so.9",
       "/venv/nvidia/cudnn/lib/libcudnn_graph.so.9", "/lib/x86_64-linux-gnu/libc.so.6"},
      {"libcudart", "libcudnn", "libnccl"});
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(copies[0].library, "libcudart");
  EXPECT_EQ(copies[0].paths.size(), 2u);
  EXPECT_EQ(copies[0].folders.size(), 2u);  // a conflict
  EXPECT_EQ(copies[1].paths.size(), 2u);    // libcudnn.so.9 and its libcudnn_graph sub-library
  EXPECT_EQ(copies[1].folders.size(), 1u);  // from one folder: fine
  EXPECT_TRUE(copies[2].paths.empty());
}

TEST(LibraryCopies, ASubLibraryFromAnotherFolderIsAConflict) {
  const auto copies = group_library_copies({"/venv/cudnn/lib/libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn_graph.so.9"}, {"libcudnn"});
  EXPECT_EQ(copies[0].folders.size(), 2u);
}

TEST(LibraryCopies, TheSameFileListedTwiceIsOneCopy) {
  const auto copies = group_library_copies({"/a/libnccl.so.2", "/a/libnccl.so.2"}, {"libnccl"});
  EXPECT_EQ(copies[0].paths.size(), 1u);
  EXPECT_EQ(copies[0].folders.size(), 1u);
}

TEST(LibraryCopies, CublasLtIsItsOwnFamily) {
  const auto copies = group_library_copies({"/a/libcublasLt.so.13", "/b/libcublas.so.13"}, {"libcublas", "libcublasLt"});
  EXPECT_EQ(copies[0].folders.size(), 1u);
  EXPECT_EQ(copies[1].folders.size(), 1u);
}

TEST(CudaVersion, FormatsDriverApiIntegers) {
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(12080), "12.8");
}

TEST(RivalFolders, FoldersHoldingOurSonamesOutsideOurFoldersAreRivals) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "gputrain-rivals";
  fs::remove_all(root);
  for (const char* dir : {"wheel", "toolkit", "unrelated"}) fs::create_directories(root / dir);
  std::ofstream(root / "wheel" / "libcudnn.so.9") << "x";
  std::ofstream(root / "toolkit" / "libcudnn_graph.so.9") << "x";
  std::ofstream(root / "unrelated" / "libfoo.so.1") << "x";
  const std::string path =
      (root / "unrelated").string() + ":" + (root / "toolkit").string() + "::/nonexistent:" + (root / "wheel").string();
  const auto rivals = rival_cuda_library_folders(path, {fs::canonical(root / "wheel").string()});
  ASSERT_EQ(rivals.size(), 1u);
  EXPECT_EQ(rivals[0], (root / "toolkit").string());
  EXPECT_TRUE(rival_cuda_library_folders("", {}).empty());
  fs::remove_all(root);
}

TEST(ForeignFiles, SubLibrariesOutsideTheAnchorFoldersAreForeign) {
  const auto copies =
      group_library_copies({"/wheel/cu13/lib/libcudart.so.13", "/wheel/cudnn/lib/libcudnn.so.9", "/wheel/cudnn/lib/libcudnn_ops.so.9",
                            "/toolkit/lib64/libnvJitLink.so.13", "/toolkit/lib64/libcudnn_graph.so.9"},
                           cuda_library_families());
  EXPECT_EQ(anchor_cuda_folders(copies), (std::vector<std::string>{"/wheel/cu13/lib", "/wheel/cudnn/lib"}));
  auto foreign = foreign_cuda_files(copies);
  std::sort(foreign.begin(), foreign.end());
  EXPECT_EQ(foreign, (std::vector<std::string>{"/toolkit/lib64/libcudnn_graph.so.9", "/toolkit/lib64/libnvJitLink.so.13"}));
}
