#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "gputrain/data/sources.hpp"

namespace fs = std::filesystem;
using gputrain::data::source_for_path;

namespace {

struct ScratchFolder {
  fs::path root = fs::temp_directory_path() / ("gputrain-source-for-path-" + std::to_string(::getpid()));
  ScratchFolder() { fs::create_directories(root); }
  ~ScratchFolder() { fs::remove_all(root); }
  std::string file(const std::string& name) const {
    fs::create_directories((root / name).parent_path());
    std::ofstream(root / name) << "x";
    return (root / name).string();
  }
  std::string folder(const std::string& name) const {
    fs::create_directories(root / name);
    return (root / name).string();
  }
};

}  // namespace

TEST(SourceForPath, FilesAreToldByTheirExtensionInAnyCase) {
  ScratchFolder s;
  EXPECT_EQ(source_for_path(s.file("x.npy")), "npy");
  EXPECT_EQ(source_for_path(s.file("data.NPZ")), "npz");
  EXPECT_EQ(source_for_path(s.file("model.safetensors")), "safetensors");
  EXPECT_EQ(source_for_path(s.file("house.csv")), "csv");
  EXPECT_EQ(source_for_path(s.file("house.tsv")), "csv");
  EXPECT_EQ(source_for_path(s.file("weights.bin")), "") << "an extension no source reads";
  EXPECT_EQ(source_for_path((s.root / "missing.npy").string()), "") << "a path that does not exist";
  EXPECT_EQ(source_for_path(""), "");
}

TEST(SourceForPath, FoldersAreToldByWhatTheyHold) {
  ScratchFolder s;
  s.file("cifar/data_batch_1.bin");
  EXPECT_EQ(source_for_path(s.folder("cifar")), "cifar10");
  s.file("mnist/train-images-idx3-ubyte.gz");
  EXPECT_EQ(source_for_path(s.folder("mnist")), "mnist");
  s.file("photos/cats/1.jpg");
  s.folder("photos/dogs");
  EXPECT_EQ(source_for_path(s.folder("photos")), "image_folder");
  s.file("flat/readme.txt");
  EXPECT_EQ(source_for_path(s.folder("flat")), "") << "files but no class folders";
  EXPECT_EQ(source_for_path(s.folder("empty")), "");
}
