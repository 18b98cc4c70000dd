#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gputrain/core/similar_path.hpp"
#include "support/scratch_folder.hpp"

using gputrain::core::did_you_mean;
using gputrain::core::similar_path;
using gputrain::test_support::ScratchFolder;

namespace {

// people.csv, configs/mlp.yaml, data/train.csv.gz, Images/cat.png, checkpoints/step-00000006.pt
struct Tree {
  ScratchFolder folder{"similar-path"};
  std::filesystem::path root = folder.path;
  Tree() {
    for (const auto* name : {"people.csv", "configs/mlp.yaml", "data/train.csv.gz", "Images/cat.png", "checkpoints/step-00000006.pt"}) {
      std::filesystem::create_directories((root / name).parent_path());
      std::ofstream(root / name) << "x";
    }
  }
  std::string at(const std::string& name) const { return (root / name).string(); }
};

}  // namespace

TEST(SimilarPath, ATypoAnotherExtensionOrAnotherCaseFindsTheFileMeant) {
  Tree t;
  EXPECT_EQ(similar_path(t.at("peple.csv")), t.at("people.csv"));
  EXPECT_EQ(similar_path(t.at("configs/mlp.yml")), t.at("configs/mlp.yaml"));
  EXPECT_EQ(similar_path(t.at("data/train.csv")), t.at("data/train.csv.gz"));
  EXPECT_EQ(similar_path(t.at("images/cat.png")), t.at("Images/cat.png"));
}

TEST(SimilarPath, EachMissingNameOnTheWayIsCorrected) {
  Tree t;
  EXPECT_EQ(similar_path(t.at("dta/trian.csv.gz")), t.at("data/train.csv.gz"));
}

TEST(SimilarPath, NothingIsOfferedForAnExistingPathOrWhenNothingIsClose) {
  Tree t;
  EXPECT_EQ(similar_path(t.at("people.csv")), std::nullopt);
  EXPECT_EQ(similar_path(t.at("customers.parquet")), std::nullopt);
  EXPECT_EQ(similar_path(t.at("data/train.csv.gz/inside")), std::nullopt);  // no correction reaches an existing path
  EXPECT_EQ(did_you_mean(t.at("customers.parquet")), "");
  EXPECT_EQ(did_you_mean(t.at("peple.csv")), " (did you mean '" + t.at("people.csv") + "'?)");
}

// step-00000009.pt is not a typo of step-00000006.pt: offering it would resume from the wrong step.
TEST(SimilarPath, NamesThatDifferInTheirDigitsAloneAreNeverOffered) {
  Tree t;
  EXPECT_EQ(similar_path(t.at("checkpoints/step-00000009.pt")), std::nullopt);
  EXPECT_EQ(similar_path(t.at("checkpoints/stepp-00000006.pt")), t.at("checkpoints/step-00000006.pt"));
}

// A config from a Windows colleague, or a path copied from a browser's address bar: the path as
// this system writes it when that exists, else what makes it another system's.
TEST(SimilarPath, WindowsAndBrowserSpellingsAreWrittenAsThisSystemWritesThem) {
  const Tree tree;
  const auto root = tree.root.string();
  EXPECT_EQ(similar_path(root + "\\data\\train.csv.gz"), tree.at("data/train.csv.gz"));
  EXPECT_EQ(similar_path(root + "\\configs\\mpl.yaml"), tree.at("configs/mlp.yaml"));  // and a typo
  EXPECT_EQ(similar_path("file://" + root + "/people%2Ecsv"), tree.at("people.csv"));
  EXPECT_EQ(gputrain::core::foreign_path_note("C:\\Users\\me\\x.csv"),
            "; 'C:' names a Windows drive, which this system has not: its paths start at /, folders separated by /");
  EXPECT_EQ(gputrain::core::foreign_path_note("%USERPROFILE%\\x.csv"), "; %NAME% is Windows' way to name a variable: write $NAME");
  EXPECT_EQ(gputrain::core::foreign_path_note("nowhere\\x.csv"), "; '\\' separates folders on Windows: on this system '/' does");
  EXPECT_EQ(did_you_mean("D:/data/x.csv"),
            " ('D:' names a Windows drive, which this system has not: its paths start at /, folders separated by /)");
  EXPECT_EQ(gputrain::core::foreign_path_note("data/x.csv"), "");
}
