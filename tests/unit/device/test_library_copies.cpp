#include <gtest/gtest.h>

#include "gputrain/device/runtime_libraries.hpp"

using namespace gputrain::device;

TEST(LibraryCopies, GroupsBySonamePrefixAndCountsDistinctFiles) {
  const auto copies = group_library_copies(
      {"/venv/nvidia/cu13/lib/libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.13", "/venv/nvidia/cudnn/lib/libcudnn.so.9",
       "/lib/x86_64-linux-gnu/libc.so.6"},
      {"libcudart.so", "libcudnn.so", "libnccl.so"});
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(copies[0].library, "libcudart.so");
  EXPECT_EQ(copies[0].paths.size(), 2u);
  EXPECT_EQ(copies[1].paths.size(), 1u);
  EXPECT_TRUE(copies[2].paths.empty());
}

TEST(LibraryCopies, TheSameFileListedTwiceIsOneCopy) {
  const auto copies = group_library_copies({"/a/libnccl.so.2", "/a/libnccl.so.2"}, {"libnccl.so"});
  EXPECT_EQ(copies[0].paths.size(), 1u);
}

TEST(CudaVersion, FormatsDriverApiIntegers) {
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(12080), "12.8");
}
