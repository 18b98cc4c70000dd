// CSV files as pandas, Python's csv, spreadsheets and Spark write them (tests/data/formats/make_fixtures.py):
// columns found by name, encodings, delimiters and line breaks, compressed files and tables in parts.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/csv_parts.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/sources.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;
using test_support::format_fixture;
using test_support::usage_error;
using test_support::usage_error_and_fix;

// Class names read as regression targets: the other task is the likely fix.
TEST(Csv, TextLabelsForRegressionPointAtClassification) {
  const auto message = usage_error_and_fix([] {
    read_csv(format_fixture("csv/iris.csv"), CsvSpec{{"sepal_length", "sepal_width"}, {"species"}, false});
  });
  EXPECT_NE(message.find("iris.csv:2: column 'species': 'setosa' is not a number"), std::string::npos) << message;
  EXPECT_NE(
      message.find(
          "\nregression labels must be numbers; to predict 'species' as classes (its values as names), set data.task: classification"),
      std::string::npos)
      << message;
}

TEST(Csv, SelectsColumnsAndMapsClassNames) {
  std::vector<std::string> names;
  const auto set = read_csv(format_fixture("csv/iris.csv"), CsvSpec{{"sepal_length", "sepal_width"}, {"species"}, true}, &names);
  EXPECT_EQ(names, (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0, 1, 2, 0}, at::kLong)));
  EXPECT_TRUE(at::allclose(set.inputs, at::tensor({5.1f, 3.5f, 7.0f, 3.2f, 6.3f, 3.3f, 4.9f, 3.0f}).view({4, 2})));
  // A validation file takes the training file's ids; a name it lacks is named where it is.
  const auto unknown = usage_error_and_fix([&] {
    read_csv(format_fixture("csv/iris_val_unknown_class.csv"), CsvSpec{{"sepal_length", "sepal_width"}, {"species"}, true}, &names);
  });
  EXPECT_NE(unknown.find("iris_val_unknown_class.csv:3: label 'virginca' is not a class of the training file; did you mean 'virginica'?"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("the model learns the training file's classes only ('setosa', 'versicolor', 'virginica')"), std::string::npos)
      << unknown;
}

// What spreadsheets export: the byte-order mark of "CSV UTF-8" is not part of the first column's
// name; "Unicode text" (UTF-16) is refused with the export to use instead.
TEST(Csv, ReadsASpreadsheetsUtf8ExportAndRefusesUtf16) {
  CsvColumns columns;
  const auto set = read_csv(format_fixture("csv/excel_utf8_bom.csv"), CsvSpec{{"a", "b"}, {"label"}, true}, nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2})));
  const auto error = usage_error([] { read_csv(format_fixture("csv/excel_utf16.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find("is UTF-16 text (as a spreadsheet's \"Unicode text\" export writes), not UTF-8"), std::string::npos) << error;
}

// A gzip'd CSV (pandas' to_csv("x.csv.gz"), or two gzip members end to end) reads as the plain
// file does; the inflating says how far it is under the file's name.
TEST(Csv, GzippedFilesReadAsThePlainFileDoes) {
  const CsvSpec spec{{}, {"label"}, true};
  const auto plain = read_csv(format_fixture("csv/numeric.csv"), spec);
  std::vector<std::string> reported;
  for (const char* name : {"csv/numeric.csv.gz", "csv/numeric_two_members.csv.gz"}) {
    const auto packed = read_csv(format_fixture(name), spec, nullptr, nullptr,
                                 [&](const std::string& what, std::uint64_t, std::uint64_t) { reported.push_back(what); });
    EXPECT_TRUE(at::equal(packed.inputs, plain.inputs)) << name;
    EXPECT_TRUE(at::equal(packed.targets, plain.targets)) << name;
  }
  EXPECT_NE(std::find(reported.begin(), reported.end(), format_fixture("csv/numeric.csv.gz") + ", inflating"), reported.end());
  EXPECT_NE(std::find(reported.begin(), reported.end(), format_fixture("csv/numeric.csv.gz")), reported.end()) << "then the parse";
}

// A bool column is a 0/1 feature, whoever wrote it.
TEST(Csv, BooleanColumnsAreReadAsOneAndZero) {
  const auto set = read_csv(format_fixture("csv/booleans.csv"), CsvSpec{{}, {"label"}, true});
  ASSERT_EQ(set.inputs.sizes(), (std::vector<std::int64_t>{6, 3}));
  EXPECT_TRUE(at::equal(set.inputs.select(1, 1), at::tensor({0.f, 1.f, 0.f, 1.f, 0.f, 1.f})));
  EXPECT_TRUE(at::equal(set.inputs.select(1, 2), at::tensor({1.f, 0.f, 0.f, 1.f, 0.f, 0.f})));
}

// Files that are not CSV text are named for what they are, with the command that makes text of them.
TEST(Csv, CompressedAndBinaryFilesAreRefusedWithTheWayToText) {
  const auto refusal = [](const std::string& name) -> std::pair<std::string, std::string> {
    try {
      read_csv(format_fixture(name), CsvSpec{{}, {"label"}, true});
      ADD_FAILURE() << "read " << name << " as a CSV";
    } catch (const UsageError& e) {
      return {e.what(), e.remedy()};
    }
    return {};
  };
  const auto cut = refusal("bad/numeric_cut.csv.gz");
  EXPECT_NE(cut.first.find("numeric_cut.csv.gz' is not a valid gzip file: it is cut short"), std::string::npos) << cut.first;
  EXPECT_NE(cut.second.find("gzip -t "), std::string::npos) << cut.second;
  const auto bzip2 = refusal("bad/numeric.csv.bz2");
  EXPECT_NE(bzip2.first.find("numeric.csv.bz2' is bzip2-compressed"), std::string::npos) << bzip2.first;
  EXPECT_EQ(bzip2.second, "decompress it first: bunzip2 -k " + format_fixture("bad/numeric.csv.bz2"));
  EXPECT_NE(refusal("bad/numeric.csv.xz").second.find("xz -dk "), std::string::npos);
  EXPECT_NE(refusal("bad/numeric.zip").first.find("is a zip archive (an Excel .xlsx workbook is one too)"), std::string::npos);
  const auto array = refusal("bad/array_named.csv");
  EXPECT_NE(array.first.find("array_named.csv' is binary data, not text: its first line has a zero byte"), std::string::npos)
      << array.first;
}

// The run's data line names the columns the model reads: an id or a second target left among the
// features shows there.
TEST(Csv, TheDataLineNamesTheFeatureAndLabelColumns) {
  CsvColumns columns;
  read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{}, {"label"}, true}, nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(columns.unnamed.empty());
  SourceSpec spec;
  spec.source = "csv";
  spec.path = format_fixture("csv/numeric.csv");
  spec.labels = {"b"};
  spec.task = "regression";
  const auto description = open_sources(spec).train->description();
  EXPECT_NE(description.find("(10 samples; features a, label; label b)"), std::string::npos) << description;
  spec.features = {"a"};
  EXPECT_NE(open_sources(spec).train->description().find("(10 samples; feature a; label b)"), std::string::npos);

  // A wide file: the first six names and the count.
  const auto wide = std::filesystem::temp_directory_path() / "gputrain-wide.csv";
  {
    std::ofstream out(wide);
    for (int c = 0; c < 12; ++c) out << "c" << c << ",";
    out << "y\n";
    for (int c = 0; c < 12; ++c) out << c << ",";
    out << "1\n";
  }
  spec.path = wide.string();
  spec.labels = {"y"};
  spec.features = {};
  const auto wide_text = open_sources(spec).train->description();
  EXPECT_NE(wide_text.find("(1 sample; features c0, c1, c2, c3, c4, c5, ... (12 columns); label y)"), std::string::npos) << wide_text;
}

// A header cell with no name is pandas' index or a trailing delimiter's empty column: left out of
// the default features, and the data line says so.
TEST(Csv, UnnamedColumnsAreLeftOutOfTheFeaturesAndSaidSo) {
  CsvColumns columns;
  const auto indexed = read_csv(format_fixture("csv/pandas_index.csv"), CsvSpec{{}, {"label"}, true}, nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(columns.unnamed, std::vector<std::size_t>{1});
  EXPECT_TRUE(at::equal(indexed.inputs.select(0, 3), at::tensor({13.0f, 23.0f})));
  read_csv(format_fixture("csv/trailing_delimiter.csv"), CsvSpec{{}, {"label"}, true}, nullptr, &columns);
  EXPECT_EQ(columns.unnamed, std::vector<std::size_t>{4});
  SourceSpec spec;
  spec.source = "csv";
  spec.path = format_fixture("csv/pandas_index.csv");
  spec.labels = {"label"};
  const auto description = open_sources(spec).train->description();
  EXPECT_NE(description.find("(4 samples; features a, b; label label; unnamed column 1 left out)"), std::string::npos) << description;
}

// The validation file's features are the training file's, found by name: another column order
// must not hand the model b where it learned a.
TEST(Csv, ValidationColumnsAreMatchedByName) {
  SourceSpec spec;
  spec.source = "csv";
  spec.path = format_fixture("csv/pandas_index.csv");
  spec.val_path = format_fixture("csv/val_reordered.csv");
  spec.labels = {"label"};
  const auto sources = open_sources(spec);
  ASSERT_TRUE(sources.val);
  const auto val = sources.val->tensors();
  ASSERT_TRUE(val.has_value());
  EXPECT_TRUE(at::equal(val->inputs.select(0, 2), at::tensor({12.0f, 22.0f}))) << val->inputs;
}

// Several targets (x and y of a position, say) are several label columns: one target each.
TEST(Csv, RegressionTakesEachLabelColumnAsATarget) {
  const auto set = read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{}, {"b", "label"}, false});
  ASSERT_EQ(set.inputs.sizes(), (std::vector<std::int64_t>{10, 1})) << "a alone is left as a feature";
  ASSERT_EQ(set.targets.sizes(), (std::vector<std::int64_t>{10, 2}));
  const auto i = at::arange(10, at::kFloat);
  EXPECT_TRUE(at::equal(set.inputs.squeeze(1), i));
  EXPECT_TRUE(at::equal(set.targets, at::stack({i * 0.5, i.remainder(2)}, 1)));

  const auto classes = usage_error([] { read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{}, {"b", "label"}, true}); });
  EXPECT_NE(classes.find("data.labels names 2 columns (b, label), but a classification has one label column"), std::string::npos)
      << classes;

  const auto twice = usage_error([] { read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{}, {"b", "b"}, false}); });
  EXPECT_NE(twice.find("data.labels names column 'b' twice"), std::string::npos) << twice;
  const auto leak = usage_error([] { read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{"a", "label"}, {"label"}, true}); });
  EXPECT_NE(leak.find("column 'label' of '" + format_fixture("csv/numeric.csv") + "' is in data.features and data.labels"),
            std::string::npos)
      << leak;
  const auto feature_twice = usage_error([] { read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{"a", "a"}, {"label"}, true}); });
  EXPECT_NE(feature_twice.find("data.features names column 'a' twice"), std::string::npos) << feature_twice;

  SourceSpec npy;
  npy.source = "npy";
  npy.path = format_fixture("npz/x.npy");
  npy.labels = {format_fixture("npz/y.npy"), format_fixture("npz/y.npy")};
  const auto arrays = usage_error([&] { open_sources(npy); });
  EXPECT_NE(arrays.find("but data.source npy takes one"), std::string::npos) << arrays;
}

// A decimal comma or thousands separators are numbers for people: the error says which, with the
// pandas line that converts the file, rather than calling the column text.
// numpy.savetxt writes no header: its first row was listed as "the header row names: 0, 0, 0".
TEST(Csv, AFileWithoutAHeaderRowIsNamedAsSuch) {
  const test_support::ScratchFolder folder("csv-headerless");
  std::ofstream(folder.path / "rows.csv") << "0.5,1,0\n2,3,1\n";
  const auto message = usage_error_and_fix([&] { read_csv((folder.path / "rows.csv").string(), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(message.find("rows.csv' has no column 'label' (data.labels): its first row (0.5, 1, 0) holds numbers, not column names, so "
                         "the file has no header row\nadd a header row naming the columns, 'label' among them"),
            std::string::npos)
      << message;
  std::ofstream(folder.path / "named.csv") << "a,b,c\n2,3,1\n";  // a header without the column: its names, as before
  const auto named = usage_error_and_fix([&] { read_csv((folder.path / "named.csv").string(), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(named.find("\nthe header row names: a, b, c"), std::string::npos) << named;
}

// A table in parts (a folder of part-*.csv, or a pattern matching them) is read as one, in sorted
// order: the later parts' columns found by name, class names numbered over all parts.
TEST(Csv, ATableInPartsIsReadAsOne) {
  test_support::ScratchFolder root("csv-parts");
  const auto parts = root.path / "parts";
  std::filesystem::create_directories(parts);
  std::ofstream(parts / "part-0.csv") << "a,b,species\n1,2,rose\n3,4,iris\n";
  std::ofstream(parts / "part-1.csv") << "species,b,a\nlily,6,5\nrose,8,7\n";  // columns in another order
  std::ofstream(parts / "_SUCCESS") << "";                                     // Spark's marker: not a part
  std::ofstream(parts / "._part-0.csv") << "\x00\x05\x16\x07";                 // macOS's AppleDouble copy: not a part
  std::ofstream(parts / "_part-2.csv") << "a,b,species\n";                     // a writer's temporary part: not one yet
  EXPECT_EQ(csv_parts(parts.string()), (std::vector<std::string>{(parts / "part-0.csv").string(), (parts / "part-1.csv").string()}));
  EXPECT_EQ(csv_parts((parts / "part-*.csv").string()).size(), 2U);
  EXPECT_TRUE(csv_parts((parts / "part-0.csv").string()).empty());  // a file is read as itself
  EXPECT_TRUE(csv_parts(root.path.string()).empty());               // a folder without CSV files

  SourceSpec spec;
  spec.source = "csv";
  spec.path = (parts / "part-*.csv").string();
  spec.labels = {"species"};
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{"iris", "lily", "rose"}));
  const auto whole = sources.train->tensors();
  ASSERT_TRUE(whole);
  EXPECT_TRUE(at::equal(whole->inputs, at::arange(1, 9, at::kFloat).view({4, 2}))) << whole->inputs;
  EXPECT_TRUE(at::equal(whole->targets, at::tensor(std::vector<std::int64_t>{2, 0, 1, 2}))) << whole->targets;
  EXPECT_NE(sources.train->description().find("(2 files, 4 samples; features a, b; label species)"), std::string::npos)
      << sources.train->description();

  // A bad cell names its part and line; names in one part and ids in another are refused.
  std::ofstream(parts / "part-2.csv") << "a,b,species\n9,oops,rose\n";
  EXPECT_NE(usage_error([&] { open_sources(spec); }).find("part-2.csv:2: column 'b' (2): 'oops' is not a number"), std::string::npos);
  std::ofstream(parts / "part-2.csv") << "a,b,species\n9,10,1\n";
  EXPECT_NE(usage_error([&] {
              open_sources(spec);
            }).find("part-0.csv' has class names in its label column, but '" + (parts / "part-2.csv").string() + "' has class ids"),
            std::string::npos);
}

// Excel reads, and some exports write, a first line "sep=;" naming the delimiter; it is not the
// header, and errors still name the lines an editor shows.
TEST(Csv, AnExcelSepLineNamesTheDelimiter) {
  test_support::ScratchFolder folder("csv-sep-line");
  const auto good = (folder.path / "good.csv").string();
  std::ofstream(good, std::ios::binary) << "sep=;\r\na;b;label\r\n1,5;2;0\r\n3;4;1\r\n";
  const auto error = usage_error([&] { read_csv(good, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find(good + ":3: column 'a' (1): '1,5' is not a number: it has a decimal comma"), std::string::npos) << error;
  std::ofstream(good, std::ios::binary) << "sep=|\na|b|label\n1|2|0\n3|4|1\n";
  const auto set = read_csv(good, CsvSpec{{}, {"label"}, true});
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2})));
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0, 1}, at::kLong)));
}

// A spreadsheet exports the cells it formatted but left empty as rows of delimiters alone (";;");
// they hold no sample and are skipped as blank lines are, where they were missing values before.
TEST(Csv, RowsOfDelimitersAloneAreSkippedAsBlankLines) {
  test_support::ScratchFolder folder("csv-delimiter-rows");
  const auto path = (folder.path / "export.csv").string();
  std::ofstream(path, std::ios::binary) << "a;b;label\r\n1;2;0\r\n;;\r\n3;4;1\r\n;;\r\n ; ;\r\n";
  const auto set = read_csv(path, CsvSpec{{}, {"label"}, true});
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2})));
  std::ofstream(path, std::ios::binary) << "a;b;label\n;;\n1;x;0\n";
  const auto error = usage_error([&] { read_csv(path, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find(path + ":3: column 'b' (2): 'x' is not a number"), std::string::npos) << error;
  // A row with some cells filled is a row with missing values, as before.
  std::ofstream(path, std::ios::binary) << "a;b;label\n1;2;0\n;;1\n";
  EXPECT_NE(usage_error([&] {
              read_csv(path, CsvSpec{{}, {"label"}, true});
            }).find(path + ":3: column 'a' (1) is empty"),
            std::string::npos);
}

// Columns are found by name (in a validation file, the weights' data.features, predict.py), so a
// name the header gives twice is refused where it would be read, with the fix; unread, it is no
// matter.
TEST(Csv, AColumnNameGivenTwiceIsRefusedWhereItIsRead) {
  test_support::ScratchFolder folder("csv-twice");
  const auto write = [&](const std::string& name, const std::string& text) {
    const auto path = (folder.path / name).string();
    std::ofstream(path) << text;
    return path;
  };
  const auto features = write("features.csv", "a,a,label\n1,2,0\n3,4,1\n");
  EXPECT_EQ(usage_error_and_fix([&] {
              read_csv(features, CsvSpec{{}, {"label"}, true});
            }),
            "'" + features +
                "' names column 'a' 2 times in its header (columns 1, 2), and gputrain finds columns by name\n"
                "give each its own name in the header (pandas reads them as 'a' and 'a.1'), or leave them out with data.exclude: [a]");
  const auto labels = write("labels.csv", "a,b,label,label\n1,2,0,0\n3,4,1,1\n");
  EXPECT_EQ(usage_error_and_fix([&] {
              read_csv(labels, CsvSpec{{}, {"label"}, true});
            }),
            "'" + labels +
                "' names column 'label' 2 times in its header (columns 3, 4), and gputrain finds columns by name\n"
                "give each its own name in the header (pandas reads them as 'label' and 'label.1')");
  const auto unread = write("unread.csv", "a,note,b,note,label\n1,x,2,y,0\n3,z,4,w,1\n");
  EXPECT_EQ(read_csv(unread, CsvSpec{{"a", "b"}, {"label"}, true}).inputs.size(1), 2);
  CsvSpec excluded{{}, {"label"}, true};
  excluded.exclude = {"note"};
  EXPECT_EQ(read_csv(unread, excluded).inputs.size(1), 2);
}

// data.exclude leaves columns (an id, free text) out of all the others; a name not in the header
// is named with the closest one.
TEST(Csv, ExcludedColumnsAreLeftOutOfTheFeatures) {
  CsvSpec spec{{}, {"species"}, true};
  spec.exclude = {"note"};
  CsvColumns columns;
  const auto set = read_csv(format_fixture("csv/iris.csv"), spec, nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"sepal_length", "sepal_width"}));
  EXPECT_EQ(set.inputs.size(1), 2);
  spec.exclude = {"notes"};
  const auto unknown = usage_error([&] { read_csv(format_fixture("csv/iris.csv"), spec); });
  EXPECT_NE(unknown.find("has no column 'notes' (data.exclude); did you mean 'note'?"), std::string::npos) << unknown;
  spec.exclude = {"note", "sepal_length", "sepal_width"};
  const auto nothing = usage_error([&] { read_csv(format_fixture("csv/iris.csv"), spec); });
  EXPECT_NE(nothing.find("has no feature columns besides the label and data.exclude"), std::string::npos) << nothing;
}

TEST(Csv, SemicolonAndTabSeparatedFilesAreRead) {
  const auto expected = read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{}, {"label"}, true});
  for (const char* name : {"csv/semicolons.csv", "csv/tabs.tsv"}) {
    const auto set = read_csv(format_fixture(name), CsvSpec{{}, {"label"}, true});
    EXPECT_TRUE(at::equal(set.inputs, expected.inputs)) << name;
    EXPECT_TRUE(at::equal(set.targets, expected.targets)) << name;
  }
}

// Lines ended by '\r' alone (classic Mac OS; Excel for Mac's "CSV (Macintosh)") read as pandas
// reads them, and a bad cell's error names the line an editor shows it on.
TEST(Csv, ClassicMacLineBreaksAreRead) {
  const auto set = read_csv(format_fixture("csv/mac_line_breaks.csv"), CsvSpec{{}, {"label"}, true});
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).reshape({3, 2})));
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0, 1, 0}, at::kLong)));

  test_support::ScratchFolder scratch("mac-line-breaks");
  const auto bad = (scratch.path / "bad.csv").string();
  std::ofstream(bad, std::ios::binary) << "a,b,label\r1,2,0\r3,oops,1\r";
  const auto error = usage_error([&] { read_csv(bad, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find(bad + ":3: column 'b' (2): 'oops' is not a number"), std::string::npos) << error;
}

TEST(Csv, RegressionTargetsAreOneColumn) {
  const auto set = read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{"a"}, {"b"}, false});
  EXPECT_EQ(set.targets.sizes(), (std::vector<std::int64_t>{10, 1}));
  EXPECT_FLOAT_EQ(set.targets[9][0].item<float>(), 4.5f);
}

// The error and fix (after a newline) of reading `text`, written as `name` in `folder`, as a CSV.
std::string refusal_of(const test_support::ScratchFolder& folder, const std::string& name, const std::string& text) {
  const auto path = (folder.path / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return usage_error_and_fix([&] { read_csv(path, CsvSpec{{}, {"label"}, true}); });
}

// JSON saved under a CSV name (an API's answer, df.to_json) was read as a CSV whose header row
// was the whole first object, or the whole file: an error naming megabytes of "columns".
TEST(Csv, JsonUnderACsvNameIsNamedWithTheReadJsonFix) {
  test_support::ScratchFolder scratch("json-named-csv");
  const auto at = [&](const std::string& name) { return (scratch.path / name).string(); };
  const auto lines = refusal_of(scratch, "rows.csv", "{\"a\": 1, \"label\": 0}\n{\"a\": 2, \"label\": 1}\n");
  EXPECT_NE(lines.find("rows.csv' is JSON lines (one object per line), not CSV"), std::string::npos) << lines;
  EXPECT_NE(lines.find("p.read_json('" + at("rows.csv") + "', lines=True).to_csv('data.csv', index=False)"), std::string::npos) << lines;
  const auto array = refusal_of(scratch, "data.csv", " [\n  {\"a\": 1, \"label\": 0}\n]");
  EXPECT_NE(array.find("data.csv' is JSON (an array), not CSV"), std::string::npos) << array;
  EXPECT_NE(array.find("p.read_json('" + at("data.csv") + "').to_csv('table.csv', index=False)\", then data.path: table.csv"),
            std::string::npos)
      << "the fix must not write over the file it reads: " << array;
  const auto columns = refusal_of(scratch, "columns.csv", "{\"a\": {\"0\": 1}, \"label\": {\"0\": 0}}");  // to_json's default orient
  EXPECT_NE(columns.find("columns.csv' is JSON (an object), not CSV"), std::string::npos) << columns;

  // A header whose first name merely starts with a bracket is a CSV.
  std::ofstream(at("brackets.csv")) << "[a],label\n1,0\n2,1\n";
  EXPECT_EQ(read_csv(at("brackets.csv"), CsvSpec{{}, {"label"}, true}).inputs.size(0), 2);
}

// numpy.savetxt's default and R's write.table put spaces between cells: read as a CSV, the header
// was one column named 'a b label'.
TEST(Csv, SpaceSeparatedFilesAreNamedWithTheLineThatWritesCommas) {
  test_support::ScratchFolder scratch("space-separated");
  const auto named = refusal_of(scratch, "named.txt.csv", "a b label\n0.5 1.5 0\n0.25  2 1\n");
  EXPECT_NE(named.find("named.txt.csv' separates its cells by spaces, not commas, semicolons or tabs (its first line is 'a b label')"),
            std::string::npos)
      << named;
  EXPECT_NE(named.find("p.read_csv('" + (scratch.path / "named.txt.csv").string() + "', sep=r'\\s+').to_csv('data.csv', index=False)"),
            std::string::npos)
      << named;
  const auto savetxt = refusal_of(scratch, "savetxt.csv", "5.0e-01 1.5e+00 0.0e+00\n2.5e-01 2.0e+00 1.0e+00\n");
  EXPECT_NE(savetxt.find("sep=r'\\s+', header=None).add_prefix('c')"), std::string::npos) << savetxt;
  EXPECT_NE(savetxt.find("the columns are then c0 to c2, data.labels: c2 for the last"), std::string::npos) << savetxt;
  // One column whose name holds a space is a CSV (of no features here).
  const auto one = refusal_of(scratch, "one.csv", "house price\n1.5\n2.5\n");
  EXPECT_EQ(one.find("spaces"), std::string::npos) << one;
}

// A file of thousands of columns without the label named: the fix lists the first 40 names.
TEST(Csv, AMissingLabelInAWideFileListsTheFirstNames) {
  test_support::ScratchFolder scratch("wide-no-label");
  const auto path = (scratch.path / "wide.csv").string();
  {
    std::ofstream out(path);
    for (int c = 0; c < 5000; ++c) out << (c ? "," : "") << "gene" << c;
    out << "\n";
    for (int c = 0; c < 5000; ++c) out << (c ? "," : "") << c;
    out << "\n";
  }
  try {
    read_csv(path, CsvSpec{{}, {"label"}, true});
    ADD_FAILURE() << "no label column, yet read";
  } catch (const UsageError& e) {
    const std::string fix = e.remedy();
    EXPECT_NE(fix.find("the header row names: gene0, gene1, "), std::string::npos) << fix;
    EXPECT_NE(fix.find("gene39, ... (5000 in all)"), std::string::npos) << fix;
    EXPECT_LT(fix.size(), 600u) << fix;
  }
}
