// A clone made without git-lfs leaves three-line pointers where the data files, weights and images
// should be. Each reader names such a file for what it is, with `git lfs pull` as the fix, instead
// of calling it a malformed array, CSV, checkpoint or image.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "data/image_decode.hpp"
#include "data/lfs_pointer.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "support/scratch_folder.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;

namespace {

std::string pointer(const std::string& size) {
  return "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize " +
         size + "\n";
}

}  // namespace

TEST(LfsPointers, APointerIsToldFromDataThatStartsAlike) {
  const auto text = lfs_pointer_text(pointer("48213"));
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "a Git LFS pointer (130 bytes) standing in for a 47.08 KiB file");
  EXPECT_TRUE(lfs_pointer_text("version https://hawser.github.com/spec/v1\noid sha256:ab\nsize 10\n").has_value());  // git-lfs < 1.0
  EXPECT_EQ(*lfs_pointer_text("version https://git-lfs.github.com/spec/v1\n"), "a Git LFS pointer (43 bytes) standing in for the file");
  EXPECT_FALSE(lfs_pointer_text("version,label\n1,0\n").has_value());                 // a CSV with a 'version' column
  EXPECT_FALSE(lfs_pointer_text(pointer("1") + std::string(1024, 'x')).has_value());  // past any pointer's size
  EXPECT_FALSE(lfs_pointer_text("").has_value());
}

TEST(LfsPointers, EveryReaderNamesAPointerWithTheFix) {
  test_support::ScratchFolder scratch("lfs-pointers");
  const auto file = [&](const std::string& name) {
    const auto path = (scratch.path / name).string();
    std::ofstream(path, std::ios::binary) << pointer("9000000");
    return path;
  };
  const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> readers{
      {"x.npy", [](const std::string& p) { read_npy(p); }},
      {"d.npz", [](const std::string& p) { read_npz(p); }},
      {"w.safetensors", [](const std::string& p) { read_safetensors(p); }},
      {"data.csv",
       [](const std::string& p) {
         read_csv(p, CsvSpec{{}, {"label"}, true});
       }},
      {"step-00000100.pt", [](const std::string& p) { train::checkpoint_progress(p); }},
  };
  for (const auto& [name, read] : readers) {
    const auto path = file(name);
    const auto error = test_support::usage_error_and_fix([&] { read(path); });
    EXPECT_NE(error.find("'" + path + "' is a Git LFS pointer (132 bytes) standing in for a 8.58 MiB file, not the file itself"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("git lfs install && git lfs pull"), std::string::npos) << error;
  }
}

// An image folder of pointers: each image is a skipped sample whose reason says what it is.
TEST(LfsPointers, AnImagePointerIsSkippedAsOne) {
  const auto bytes = pointer("4000");
  std::vector<std::uint8_t> chw(3 * 16 * 16);
  try {
    decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 16, 16, chw.data());
    ADD_FAILURE() << "a pointer decoded as an image";
  } catch (const SkippedSample& e) {
    EXPECT_EQ(std::string(e.what()),
              "a Git LFS pointer (129 bytes) standing in for a 3.91 KiB file, not the image: git lfs pull fetches the images");
  }
}
