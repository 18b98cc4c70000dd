// data.missing for CSV: a missing feature value (an empty cell, NA, nan, ...) filled with the
// training file's column mean or 0, or its row dropped; the validation file filled with the
// training file's values; a table in parts filled as one; what cannot be done is refused.
// (`error`, the default, is tests/unit/data/test_csv_cells.cpp's.)
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/csv_parts.hpp"
#include "support/scratch_folder.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;

namespace {

std::vector<float> row_of(const at::Tensor& inputs, std::int64_t row) {
  const auto r = inputs[row].contiguous();
  return {r.data_ptr<float>(), r.data_ptr<float>() + r.numel()};
}

CsvSpec with_missing(const std::string& missing) {
  CsvSpec spec{{}, {"label"}, true};
  spec.missing = missing;
  return spec;
}

// a: 1, (empty), 3, 4; b: NA, 2, nan, 6; the labels 0, 1, 1, 0.
const char* const kTrain = "a,b,label\n1,NA,0\n,2,1\n3,nan,1\n4,6,0\n";

}  // namespace

TEST(CsvMissing, MeanFillsWithTheTrainingColumnsMeanAndSaysSo) {
  test_support::ScratchFolder folder("csv-missing-mean");
  std::ofstream(folder.path / "train.csv") << kTrain;
  std::ofstream(folder.path / "val.csv") << "b,a,label\n,,1\n5,5,0\n";  // columns in another order
  CsvColumns columns;
  const auto train = read_csv((folder.path / "train.csv").string(), with_missing("mean"), nullptr, &columns);
  const float mean_a = (1 + 3 + 4) / 3.0f, mean_b = (2 + 6) / 2.0f;
  EXPECT_EQ(row_of(train.inputs, 0), (std::vector<float>{1, mean_b}));
  EXPECT_EQ(row_of(train.inputs, 1), (std::vector<float>{mean_a, 2}));
  EXPECT_EQ(row_of(train.inputs, 2), (std::vector<float>{3, mean_b}));
  EXPECT_EQ(row_of(train.inputs, 3), (std::vector<float>{4, 6}));
  ASSERT_EQ(columns.fill_values.size(), 2U);
  EXPECT_EQ(columns.fill_values[0].first, "a");
  EXPECT_DOUBLE_EQ(columns.fill_values[0].second, 8.0 / 3.0);
  ASSERT_EQ(columns.notes.size(), 1U);
  EXPECT_NE(columns.notes[0].find("data.missing: mean: 3 of 4 rows of '" + (folder.path / "train.csv").string() +
                                  "' miss a value ('a' 1, 'b' 2), filled with the column's mean"),
            std::string::npos)
      << columns.notes[0];

  auto val_spec = with_missing("mean");
  val_spec.features = columns.features;
  for (const auto& fill : columns.fill_values) val_spec.fill_values.push_back(fill.second);
  const auto val = read_csv((folder.path / "val.csv").string(), val_spec);
  EXPECT_EQ(row_of(val.inputs, 0), (std::vector<float>{static_cast<float>(8.0 / 3.0), 4})) << "the training file's means";
  EXPECT_EQ(row_of(val.inputs, 1), (std::vector<float>{5, 5}));
}

// The note names the first twelve columns that miss values and the count: a file of 20,000 such
// columns made a note of 300 KB.
TEST(CsvMissing, TheNoteNamesTheFirstTwelveOfManyColumns) {
  test_support::ScratchFolder folder("csv-missing-wide");
  std::string header;
  for (int c = 0; c < 30; ++c) header += "x" + std::to_string(c) + ",";
  std::ofstream file(folder.path / "train.csv");
  file << header << "label\n";
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 30; ++c) file << (r == 0 ? "" : "1") << ",";
    file << r % 2 << "\n";
  }
  file.close();
  CsvColumns columns;
  read_csv((folder.path / "train.csv").string(), with_missing("zero"), nullptr, &columns);
  ASSERT_EQ(columns.notes.size(), 1U);
  EXPECT_NE(columns.notes[0].find("miss a value ('x0' 1, 'x1' 1, 'x2' 1, 'x3' 1, 'x4' 1, 'x5' 1, 'x6' 1, 'x7' 1, 'x8' 1, 'x9' 1, 'x10' 1, "
                                  "'x11' 1, ... (30 in all)), filled with 0"),
            std::string::npos)
      << columns.notes[0];
}

TEST(CsvMissing, ZeroFillsWithZero) {
  test_support::ScratchFolder folder("csv-missing-zero");
  std::ofstream(folder.path / "train.csv") << kTrain;
  CsvColumns columns;
  const auto train = read_csv((folder.path / "train.csv").string(), with_missing("zero"), nullptr, &columns);
  EXPECT_EQ(row_of(train.inputs, 0), (std::vector<float>{1, 0}));
  EXPECT_EQ(row_of(train.inputs, 1), (std::vector<float>{0, 2}));
  EXPECT_EQ(columns.fill_values, (std::vector<std::pair<std::string, double>>{{"a", 0.0}, {"b", 0.0}}));
}

TEST(CsvMissing, DropLeavesTheRowsOutWithTheirLabels) {
  test_support::ScratchFolder folder("csv-missing-drop");
  std::ofstream(folder.path / "train.csv") << kTrain;
  CsvColumns columns;
  const auto train = read_csv((folder.path / "train.csv").string(), with_missing("drop"), nullptr, &columns);
  ASSERT_EQ(train.size(), 1);
  EXPECT_EQ(row_of(train.inputs, 0), (std::vector<float>{4, 6}));
  EXPECT_TRUE(at::equal(train.targets, at::tensor({0}, at::kLong)));
  EXPECT_TRUE(columns.fill_values.empty());
  ASSERT_EQ(columns.notes.size(), 1U);
  EXPECT_NE(columns.notes[0].find("3 of 4 rows of"), std::string::npos) << columns.notes[0];
  EXPECT_NE(columns.notes[0].find("miss a value ('a' 1, 'b' 2) and are left out"), std::string::npos) << columns.notes[0];

  std::ofstream(folder.path / "holes.csv") << "a,b,label\n1,,0\n,2,1\n";
  const auto error = test_support::thrown_usage_error([&] { read_csv((folder.path / "holes.csv").string(), with_missing("drop")); });
  ASSERT_TRUE(error);
  const std::string what = error->what(), fix = error->remedy();
  EXPECT_NE(what.find("data.missing: drop leaves no row of"), std::string::npos) << what;
  EXPECT_NE(fix.find("data.missing: mean"), std::string::npos) << fix;
}

TEST(CsvMissing, WhatCannotBeFilledIsRefused) {
  test_support::ScratchFolder folder("csv-missing-refused");
  std::ofstream(folder.path / "empty_column.csv") << "a,b,label\n1,,0\n2,NA,1\n";
  const auto error = test_support::thrown_usage_error([&] { read_csv((folder.path / "empty_column.csv").string(), with_missing("mean")); });
  ASSERT_TRUE(error);
  const std::string what = error->what(), fix = error->remedy();
  EXPECT_NE(what.find("data.missing: mean: column 'b' of"), std::string::npos) << what;
  EXPECT_NE(what.find("has no value to take the mean of"), std::string::npos) << what;
  EXPECT_EQ(fix, "leave it out (data.exclude: [b])");
  // A missing label is no feature to fill: still the parse's error, counted and fixed for the label
  // alone (the missing feature beside it is data.missing's), not "not filled in for you".
  std::ofstream(folder.path / "no_label.csv") << "a,label\n1,0\n2,\n,1\n";
  const auto label = test_support::usage_error_and_fix([&] { read_csv((folder.path / "no_label.csv").string(), with_missing("mean")); });
  EXPECT_NE(label.find("the label (column 'label') is empty: a missing value; 'label' misses 1 of its 3 rows\n"
                       "a sample needs its label (data.missing fills features only): drop the rows without one with python3 -c "),
            std::string::npos)
      << label;
  EXPECT_NE(label.find("df.dropna(subset=['label'])"), std::string::npos) << label;
}

TEST(CsvMissing, ATableInPartsIsFilledAsOne) {
  test_support::ScratchFolder folder("csv-missing-parts");
  std::ofstream(folder.path / "part-0.csv") << "a,label\n1,0\n,1\n";
  std::ofstream(folder.path / "part-1.csv") << "a,label\n5,1\n";
  CsvColumns columns;
  const auto set = read_csv_parts({(folder.path / "part-0.csv").string(), (folder.path / "part-1.csv").string()}, with_missing("mean"),
                                  nullptr, &columns, {});
  EXPECT_EQ(row_of(set.inputs, 1), (std::vector<float>{3})) << "the mean of both parts' values";
}
