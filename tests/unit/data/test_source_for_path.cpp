#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gputrain/data/sources.hpp"
#include "support/scratch_folder.hpp"

namespace fs = std::filesystem;
using gputrain::data::source_for_path;
using gputrain::test_support::ScratchFolder;

namespace {

// Creates `name` (and its folders) under `root` as a one-byte file; returns its path.
std::string file(const fs::path& root, const std::string& name) {
  fs::create_directories((root / name).parent_path());
  std::ofstream(root / name) << "x";
  return (root / name).string();
}

std::string folder(const fs::path& root, const std::string& name) {
  fs::create_directories(root / name);
  return (root / name).string();
}

}  // namespace

TEST(SourceForPath, FilesAreToldByTheirExtensionInAnyCase) {
  ScratchFolder s("source-for-path");
  EXPECT_EQ(source_for_path(file(s.path, "x.npy")), "npy");
  EXPECT_EQ(source_for_path(file(s.path, "data.NPZ")), "npz");
  EXPECT_EQ(source_for_path(file(s.path, "model.safetensors")), "safetensors");
  EXPECT_EQ(source_for_path(file(s.path, "house.csv")), "csv");
  EXPECT_EQ(source_for_path(file(s.path, "house.tsv")), "csv");
  EXPECT_EQ(source_for_path(file(s.path, "house.csv.gz")), "csv") << "the CSV reader inflates it";
  EXPECT_EQ(source_for_path(file(s.path, "x.npy.gz")), "") << "the .npy reader does not";
  EXPECT_EQ(source_for_path(file(s.path, "weights.bin")), "") << "an extension no source reads";
  EXPECT_EQ(source_for_path((s.path / "missing.npy").string()), "npy") << "told by its name, so that its reader says it is missing";
  EXPECT_EQ(source_for_path((s.path / "missing.bin").string()), "");
  EXPECT_EQ(source_for_path(""), "");
}

TEST(SourceForPath, FoldersAreToldByWhatTheyHold) {
  ScratchFolder s("source-for-path");
  file(s.path, "cifar/data_batch_1.bin");
  EXPECT_EQ(source_for_path(folder(s.path, "cifar")), "cifar10");
  file(s.path, "mnist/train-images-idx3-ubyte.gz");
  EXPECT_EQ(source_for_path(folder(s.path, "mnist")), "mnist");
  file(s.path, "photos/cats/1.jpg");
  folder(s.path, "photos/dogs");
  EXPECT_EQ(source_for_path(folder(s.path, "photos")), "image_folder");
  file(s.path, "flat/readme.txt");
  EXPECT_EQ(source_for_path(folder(s.path, "flat")), "") << "files but no class folders";
  EXPECT_EQ(source_for_path(folder(s.path, "empty")), "");
  // A table in parts: its folder, or a pattern matching the parts.
  file(s.path, "parts/part-0.csv");
  file(s.path, "parts/_SUCCESS");
  EXPECT_EQ(source_for_path(folder(s.path, "parts")), "csv");
  EXPECT_EQ(source_for_path((s.path / "parts" / "part-*.csv").string()), "csv");
  EXPECT_EQ(source_for_path((s.path / "parts" / "*.npy").string()), "") << "a pattern that matches no CSV file";
}
