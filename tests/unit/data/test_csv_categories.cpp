// Columns of categories (data.categorical) read as one-hot input columns: in their column's place
// among the features, sorted (as numbers when all are), a missing value none of them; a validation
// file and a table's parts numbered over the training categories; columns that are names, ids or
// free text refused with the settings that leave them out; and the fix offered for text columns.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gputrain/core/error.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/sources.hpp"
#include "support/scratch_folder.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;
using test_support::ScratchFolder;
using test_support::usage_error;
using test_support::usage_error_and_fix;

namespace {

std::string written(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

CsvSpec with_categories(std::vector<std::string> categorical, std::vector<std::string> features = {}) {
  CsvSpec spec{std::move(features), {"label"}, true};
  spec.categorical = std::move(categorical);
  return spec;
}

at::Tensor rows(std::vector<float> values, std::int64_t width) {
  return at::tensor(values).view({static_cast<std::int64_t>(values.size()) / width, width});
}

}  // namespace

TEST(CsvCategories, EachCategoryIsAnInputColumnInItsColumnsPlace) {
  ScratchFolder root("csv-categories");
  const auto file =
      written(root.path / "pets.csv", "size,colour,grade,w,label\n1.5,red,10,7,0\n2.5, blue ,2,8,1\n3.5,,1,9,0\n4.5,red,NA,10,1\n");
  CsvColumns columns;
  const auto set = read_csv(file, with_categories({"grade", "colour"}), nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"size", "colour", "grade", "w"}));
  EXPECT_EQ(columns.inputs, (std::vector<std::string>{"size", "colour=blue", "colour=red", "grade=1", "grade=2", "grade=10", "w"}));
  ASSERT_EQ(columns.categories.size(), 2U);
  EXPECT_EQ(columns.categories[0].column, "colour");
  EXPECT_EQ(columns.categories[0].values, (std::vector<std::string>{"blue", "red"}));   // cells are trimmed, as numbers are
  EXPECT_EQ(columns.categories[1].values, (std::vector<std::string>{"1", "2", "10"}));  // numbers sort as numbers
  // A missing value (empty, "NA") is none of the categories: 0 in each, not an error.
  EXPECT_TRUE(at::equal(set.inputs, rows({1.5F, 0, 1, 0, 0, 1, 7,  //
                                          2.5F, 1, 0, 0, 1, 0, 8,  //
                                          3.5F, 0, 0, 1, 0, 0, 9,  //
                                          4.5F, 0, 1, 0, 0, 0, 10},
                                         7)))
      << set.inputs;
  EXPECT_TRUE(at::equal(set.targets, at::tensor(std::vector<std::int64_t>{0, 1, 0, 1})));

  // Every feature may be a category; the data line counts each column's categories and the inputs.
  SourceSpec spec;
  spec.source = "csv";
  spec.path = file;
  spec.labels = {"label"};
  spec.features = {"colour", "grade"};
  spec.categorical = {"colour", "grade"};
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.train->layout().input_shape, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(sources.feature_columns, (std::vector<std::string>{"colour", "grade"}));
  EXPECT_EQ(sources.feature_names.front(), "colour=blue");
  EXPECT_NE(sources.train->description().find("features colour (2 categories), grade (3 categories): 5 inputs; label label"),
            std::string::npos)
      << sources.train->description();
}

// A validation file reads the training file's categories, each in its input column; one the
// training file lacks is none of them, and said so before training.
TEST(CsvCategories, AValidationFileTakesTheTrainingCategories) {
  ScratchFolder root("csv-categories-val");
  SourceSpec spec;
  spec.source = "csv";
  spec.path = written(root.path / "train.csv", "colour,size,label\nred,1,0\nblue,2,1\ngreen,3,0\n");
  spec.val_path = written(root.path / "val.csv", "size,colour,label\n4,green,1\n5,purple,0\n6,purple,1\n");  // columns in another order
  spec.labels = {"label"};
  spec.categorical = {"colour"};
  const auto sources = open_sources(spec);
  const auto val = sources.val->tensors();
  ASSERT_TRUE(val);
  EXPECT_TRUE(at::equal(val->inputs, rows({0, 1, 0, 4,  //
                                           0, 0, 0, 5,  //
                                           0, 0, 0, 6},
                                          4)))
      << val->inputs;
  ASSERT_EQ(sources.notes.size(), 1U);
  EXPECT_EQ(sources.notes.front(),
            "data.val_path: 2 rows of 3 hold a category of 'colour' that the training data lacks (such as 'purple'): read as none of its "
            "categories, all of its one-hot columns 0");
}

// A table in parts: categories numbered over all parts, as its class names are.
TEST(CsvCategories, ATableInPartsNumbersThemOverAllParts) {
  ScratchFolder root("csv-categories-parts");
  written(root.path / "part-0.csv", "colour,label\nred,0\nred,1\n");
  written(root.path / "part-1.csv", "colour,label\nblue,1\ngreen,0\n");
  SourceSpec spec;
  spec.source = "csv";
  spec.labels = {"label"};
  spec.categorical = {"colour"};
  // Validation parts read the training categories, whatever each part holds.
  std::filesystem::create_directories(root.path / "val");
  written(root.path / "val" / "part-0.csv", "colour,label\ngreen,0\n");
  written(root.path / "val" / "part-1.csv", "colour,label\npink,1\nblue,1\n");
  spec.path = (root.path / "part-*.csv").string();
  spec.val_path = (root.path / "val").string();
  const auto sources = open_sources(spec);
  const auto whole = sources.train->tensors();
  ASSERT_TRUE(whole);
  EXPECT_TRUE(at::equal(whole->inputs, rows({0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0}, 3))) << whole->inputs;
  const auto val = sources.val->tensors();
  ASSERT_TRUE(val);
  EXPECT_TRUE(at::equal(val->inputs, rows({0, 1, 0, 0, 0, 0, 1, 0, 0}, 3))) << val->inputs;
  ASSERT_EQ(sources.notes.size(), 1U);
  EXPECT_NE(sources.notes.front().find("1 row of 3 holds a category of 'colour' that the training data lacks (such as 'pink')"),
            std::string::npos)
      << sources.notes.front();
}

// Names, ids and free text hold a new value in most rows: as many input columns as rows, which
// say nothing of new rows. Refused, as are more than 1000 categories and a column without values.
TEST(CsvCategories, ColumnsThatAreNotCategoriesAreRefusedWithTheSettingsThatLeaveThemOut) {
  ScratchFolder root("csv-categories-refused");
  std::string names = "name,colour,label\n", many = "zip,label\n", none = "colour,x,label\n";
  for (int i = 0; i < 60; ++i) names += "person " + std::to_string(i) + "," + (i % 2 ? "red" : "blue") + ",0\n";
  for (int i = 0; i < 2500; ++i) many += std::to_string(10000 + i % 1200) + ",1\n";
  for (int i = 0; i < 3; ++i) none += ",1,0\n";
  const auto names_file = written(root.path / "names.csv", names);
  EXPECT_EQ(usage_error_and_fix([&] {
              read_csv(names_file, with_categories({"colour", "name"}));
            }),
            "column 'name' of '" + names_file +
                "' (data.categorical) has 60 different values in its 60 rows: a new value in most rows, as "
                "names, ids and free text have, not categories\nleave it out: data.categorical: [colour] and data.exclude: [name]");
  const auto listed = usage_error_and_fix([&] { read_csv(names_file, with_categories({"name", "colour"}, {"name", "colour"})); });
  EXPECT_NE(listed.find("\nleave it out: data.categorical: [colour] and data.features: [colour]"), std::string::npos) << listed;
  EXPECT_NE(usage_error_and_fix([&] {
              read_csv(names_file, with_categories({"name"}, {"name"}));
            }).find("\nleave it out: remove data.categorical, and give the model other features"),
            std::string::npos);
  const auto many_file = written(root.path / "many.csv", many);
  const auto too_many = usage_error_and_fix([&] { read_csv(many_file, with_categories({"zip"})); });
  EXPECT_NE(
      too_many.find("has 1200 different values in its 2500 rows: more than 1000 categories, each an input column\nturn it into fewer"),
      std::string::npos)
      << too_many;
  const auto none_file = written(root.path / "none.csv", none);
  EXPECT_NE(usage_error([&] { read_csv(none_file, with_categories({"colour"})); }).find("has no value: each of its 3 rows misses one"),
            std::string::npos);
}

TEST(CsvCategories, EachColumnNamedIsAFeature) {
  ScratchFolder root("csv-categories-named");
  const auto file = written(root.path / "pets.csv", "colour,size,label\nred,1,0\nblue,2,1\n");
  EXPECT_NE(usage_error([&] {
              read_csv(file, with_categories({"color"}));
            }).find("has no column 'color' (data.categorical); did you mean 'colour'?"),
            std::string::npos);
  EXPECT_EQ(usage_error_and_fix([&] { read_csv(file, with_categories({"label"})); }),
            "column 'label' is in data.categorical and data.labels\nleave it out of data.categorical: a label column holds classes "
            "already, by name or by id");
  auto excluded = with_categories({"colour"});
  excluded.exclude = {"colour"};
  EXPECT_NE(usage_error([&] { read_csv(file, excluded); }).find("column 'colour' is in data.categorical and data.exclude"),
            std::string::npos);
  EXPECT_EQ(usage_error_and_fix([&] { read_csv(file, with_categories({"colour"}, {"size"})); }),
            "data.categorical names column 'colour', which data.features does not list\nadd it to data.features: [size, colour]");
  EXPECT_NE(usage_error([&] {
              read_csv(file, with_categories({"colour", "colour"}));
            }).find("data.categorical names column 'colour' twice"),
            std::string::npos);
}

// The first row's text columns, all named at once: categories (a few values, repeated) with the
// data.categorical line; names and free text with the line that leaves them out; a column whose
// first rows miss a value counts by its first value.
TEST(CsvCategories, TextColumnsAreToldApartAsCategoriesOrFreeText) {
  ScratchFolder root("csv-categories-text");
  std::string text = "id,name,sex,age,cabin,port,label\n";
  for (int i = 0; i < 120; ++i)
    text += std::to_string(i) + ",\"Person, Mr. " + std::to_string(i) + "\"," + (i % 3 ? "male" : "female") + "," +
            std::to_string(20 + i % 40) + "," + (i < 5 ? "" : "C" + std::to_string(i)) + "," + "SCQ"[i % 3] + "," + std::to_string(i % 2) +
            "\n";
  const auto file = written(root.path / "people.csv", text);
  EXPECT_EQ(usage_error_and_fix([&] {
              read_csv(file, CsvSpec{{}, {"label"}, true});
            }),
            file +
                ":2: column 'name' (2): 'Person, Mr. 0' is not a number\n"
                "columns 'name', 'sex', 'cabin', 'port' hold text: one-hot encode 'sex', 'port' with data.categorical: [sex, port]; "
                "leave 'name', 'cabin' out with data.exclude: [name, cabin] (a new value in most rows: names, ids or free text)");
  // Once the categories are read as such, the others are what is left; the key is the one in use.
  auto after = with_categories({"sex", "port"}, {"age", "sex", "name", "port"});
  EXPECT_NE(usage_error_and_fix([&] {
              read_csv(file, after);
            }).find("column 'name' holds text: leave it out with data.features: [age, sex, port] (a new value in most rows"),
            std::string::npos);
}

// A file of thousands of text columns made a fix naming each three times (750 KB for 30,000): the
// fix names the first twelve of each list and says how many there are.
TEST(CsvCategories, AFixNamesTheFirstTwelveOfManyTextColumns) {
  ScratchFolder root("csv-categories-wide");
  std::string header, row;
  for (int c = 0; c < 40; ++c) header += "t" + std::to_string(c) + ",", row += std::string(c % 2 ? "red" : "blue") + ",";
  std::string text = header + "label\n";
  for (int i = 0; i < 30; ++i) text += row + std::to_string(i % 2) + "\n";
  const auto file = written(root.path / "wide.csv", text);
  const auto fix = usage_error_and_fix([&] { read_csv(file, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(fix.find("columns 't0', 't1', 't2', 't3', 't4', 't5', 't6', 't7', 't8', 't9', 't10', 't11', ... (40 in all) hold text: "
                     "one-hot encode them with data.categorical: [t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, ... (40 in all)], "
                     "or leave them out with data.exclude: [t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, ... (40 in all)]"),
            std::string::npos)
      << fix;
  EXPECT_EQ(fix.find("t12"), std::string::npos) << fix;
}

// A missing category is none of them: the pandas line that drops rows with missing values keeps
// rows that miss only a category.
TEST(CsvCategories, RowsMissingOnlyACategoryAreNotDropped) {
  ScratchFolder root("csv-categories-missing");
  const auto file = written(root.path / "pets.csv", "colour,size,label\nred,1,0\n,,1\nblue,3,0\n");
  const auto missing = usage_error_and_fix([&] { read_csv(file, with_categories({"colour"})); });
  EXPECT_NE(missing.find("pets.csv:3: column 'size' (2) is empty: a missing value; 1 of its 3 rows misses a value ('size' 1)"),
            std::string::npos)
      << missing;
  EXPECT_NE(missing.find("df.dropna(subset=df.columns.difference(['colour']))"), std::string::npos) << missing;
}

// An Excel "CSV" export on Windows is Windows-1252: its names become UTF-8 (JSON and safetensors
// metadata hold nothing else), said once in a note, and a UTF-8 validation file's same names match.
TEST(CsvCategories, AWindows1252FileIsReadAsUtf8AndMatchesAUtf8ValidationFile) {
  ScratchFolder root("csv-cp1252");
  SourceSpec spec;
  spec.source = "csv";
  spec.path = written(root.path / "train.csv",
                      "x,caf\xE9,label\n1,r\xE9"
                      "d,yes\n2,blue,no\n3,r\xE9"
                      "d,no\n");
  spec.val_path = written(root.path / "val.csv",
                          "x,caf\xC3\xA9,label\n4,r\xC3\xA9"
                          "d,yes\n");
  spec.labels = {"label"};
  spec.categorical = {"caf\xC3\xA9"};  // the config, in UTF-8, names the column as it reads
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.feature_names, (std::vector<std::string>{"x", "caf\xC3\xA9=blue",
                                                             "caf\xC3\xA9=r\xC3\xA9"
                                                             "d"}));
  ASSERT_EQ(sources.notes.size(), 1U);
  EXPECT_EQ(sources.notes[0].find("'" + spec.path + "' (line 1: byte 0xE9, read as '\xC3\xA9') is not UTF-8: read as Windows-1252"), 0U)
      << sources.notes[0];
  // The validation row's category is the training file's "réd": its one-hot column is 1.
  const auto val = sources.val->tensors();
  ASSERT_TRUE(val);
  EXPECT_TRUE(at::equal(val->inputs, rows({4, 0, 1}, 3))) << val->inputs;
}

// A class name or category a Mac wrote decomposed ('cafe' and U+0301) is the one others write
// composed (U+00E9): one class, one category, whichever file has which form.
TEST(CsvCategories, OneNameInTwoUnicodeFormsIsOneClassAndOneCategory) {
  ScratchFolder root("csv-unicode-forms");
  SourceSpec spec;
  spec.source = "csv";
  spec.path = written(root.path / "train.csv", "x,drink,label\n1,cafe\xCC\x81,cafe\xCC\x81\n2,tea,tea\n");
  spec.val_path = written(root.path / "val.csv", "x,drink,label\n4,caf\xC3\xA9,caf\xC3\xA9\n");
  spec.labels = {"label"};
  spec.categorical = {"drink"};
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{"caf\xC3\xA9", "tea"}));
  // A column named in the config composed, written decomposed in the header: found.
  const auto named = written(root.path / "named.csv", "x,cafe\xCC\x81,label\n1,2,a\n3,4,b\n");
  EXPECT_NO_THROW(read_csv(named, CsvSpec{{"x", "caf\xC3\xA9"}, {"label"}, true}));
  EXPECT_EQ(sources.feature_names, (std::vector<std::string>{"x", "drink=caf\xC3\xA9", "drink=tea"}));
  const auto val = sources.val->tensors();
  ASSERT_TRUE(val);
  EXPECT_TRUE(at::equal(val->inputs, rows({4, 1, 0}, 3))) << val->inputs;
  EXPECT_EQ(val->targets.item<std::int64_t>(), 0);
}
