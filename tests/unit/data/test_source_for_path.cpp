#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gputrain/core/error.hpp"
#include "gputrain/data/sources.hpp"
#include "support/scratch_folder.hpp"
#include "support/usage_errors.hpp"

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

// A features .npy given without its labels: the fix names the labels file beside it when its name
// gives it away (X_train.npy / y_train.npy, features.npy / labels.npy, y.npy), else lists the
// other arrays there. The files need not be read: the error comes first.
TEST(NpyLabels, TheFixNamesTheLabelsFileBesideTheFeatures) {
  ScratchFolder s("npy-labels");
  // `val_features`: the training labels are given, the validation labels not.
  const auto fix_for = [](const std::string& features, const std::string& val_features = "") {
    gputrain::data::SourceSpec spec;
    spec.source = "npy";
    spec.path = features;
    if (!val_features.empty()) spec.labels = {features};
    spec.val_path = val_features;
    return gputrain::test_support::usage_fix([&] { gputrain::data::open_sources(spec); });
  };
  // A folder of `s` holding one-byte `files`.
  const auto folder_of = [&](const std::string& name, std::initializer_list<const char*> files) {
    const auto path = folder(s.path, name);
    for (const char* f : files) file(path, f);
    return path;
  };
  const auto pairs = folder_of("pairs", {"X_train.npy", "y_train.npy", "X_test.npy", "y_test.npy"});
  EXPECT_EQ(fix_for(pairs + "/X_train.npy"), "set data.labels: " + pairs + "/y_train.npy (beside X_train.npy)");
  const auto named = folder_of("named", {"features.npy", "labels.npy"});
  EXPECT_EQ(fix_for(named + "/features.npy"), "set data.labels: " + named + "/labels.npy (beside features.npy)");
  const auto usual = folder_of("usual", {"pixels.npy", "y.npy"});
  EXPECT_EQ(fix_for(usual + "/pixels.npy"), "set data.labels: " + usual + "/y.npy (beside pixels.npy)");
  const auto unclear = folder_of("unclear", {"a.npy", "c.npy", "b.npy"});
  EXPECT_EQ(fix_for(unclear + "/a.npy"), "set data.labels to the labels' .npy file; beside a.npy there are b.npy, c.npy");
  const auto alone = folder_of("alone", {"x.npy"});
  EXPECT_EQ(fix_for(alone + "/x.npy"), "set data.labels: path/to/labels.npy");
  // The validation features' labels, beside them.
  EXPECT_EQ(fix_for(pairs + "/X_train.npy", pairs + "/X_test.npy"), "set data.val_labels: " + pairs + "/y_test.npy (beside X_test.npy)");
}
