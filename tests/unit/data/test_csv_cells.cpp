// A CSV's cells: numbers as strtod reads them, quoted cells across lines, and every bad, missing or
// non-finite cell named by its line and column, with the fix. (data.missing is test_csv_missing.cpp's.)
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/data/csv_format.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;
using test_support::format_fixture;
using test_support::usage_error;
using test_support::usage_error_and_fix;

TEST(Csv, NumbersWrittenForPeopleAreNamedWithTheConversion) {
  const auto comma = usage_error_and_fix([] { read_csv(format_fixture("bad/decimal_comma.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(comma.find("decimal_comma.csv:2: column 'a' (1): '3,5' is not a number: it has a decimal comma"), std::string::npos) << comma;
  EXPECT_NE(comma.find("pd.read_csv('" + format_fixture("bad/decimal_comma.csv") + "', sep=';', decimal=','); df.to_csv('" +
                       format_fixture("bad/decimal_comma-converted.csv") + "', index=False)"),
            std::string::npos)
      << comma;
  EXPECT_EQ(comma.find("holds text"), std::string::npos) << comma;
  const auto thousands = usage_error_and_fix([] { read_csv(format_fixture("bad/thousands.csv"), CsvSpec{{}, {"price"}, false}); });
  EXPECT_NE(thousands.find("thousands.csv:2: column 'price': '1,234.5' is not a number: it has thousands separators"), std::string::npos)
      << thousands;
  EXPECT_NE(thousands.find("pd.read_csv('" + format_fixture("bad/thousands.csv") + "', thousands=',')"), std::string::npos) << thousands;
}

// A column of amounts as a report writes them: named as numbers, with the pandas line that makes
// plain ones of that column (checked with pandas 3.1 on each kind), not "one-hot encode it".
TEST(Csv, NumbersWithSignsAreNamedWithTheColumnsConversion) {
  const auto folder = std::filesystem::temp_directory_path() / "gputrain-csv-signs";
  std::filesystem::create_directories(folder);
  const auto path = (folder / "prices.csv").string();
  std::ofstream(path) << "a;price;label\n1;1.234,50 \xE2\x82\xAC;0\n2;99,00 \xE2\x82\xAC;1\n";
  const auto error = usage_error_and_fix([&] { read_csv(path, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find("prices.csv:2: column 'price' (2): '1.234,50 \xE2\x82\xAC' is not a number: it is a number written with a "
                       "currency sign and a decimal comma"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("pd.read_csv('" + path + "', sep=';'); df.assign(**{'price': lambda d: d['price'].astype(str)"), std::string::npos)
      << error;
  EXPECT_NE(error.find(".str.replace('.', '', regex=False).str.replace(',', '.', regex=False).astype(float)})"), std::string::npos)
      << error;
  EXPECT_EQ(error.find("one-hot"), std::string::npos) << error;
  std::filesystem::remove_all(folder);
}

TEST(Csv, BadCellsNameTheLineAndColumn) {
  const auto bad = usage_error([] { read_csv(format_fixture("bad/bad_cell.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(bad.find("bad_cell.csv:3: column 'b' (2): 'oops' is not a number"), std::string::npos) << bad;
  // All-but-label includes the text column: from its first row on, so the fix is to one-hot encode
  // its categories or leave it out, in the key the user chose: data.exclude when they did not list
  // the features.
  const auto text_column_fix = [](CsvSpec spec) -> std::string {
    try {
      read_csv(format_fixture("csv/iris.csv"), spec);
      ADD_FAILURE() << "read a text column as features";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("iris.csv:2: column 'note' (3): 'a, b' is not a number"), std::string::npos) << e.what();
      return e.remedy();
    }
    return "";
  };
  EXPECT_EQ(text_column_fix(CsvSpec{{}, {"species"}, true}),
            "column 'note' holds text: one-hot encode it with data.categorical: [note], or leave it out with data.exclude: [note]");
  CsvSpec excluding{{}, {"species"}, true};
  excluding.exclude = {"sepal_width"};
  EXPECT_NE(text_column_fix(excluding).find("leave it out with data.exclude: [sepal_width, note]"), std::string::npos);
  EXPECT_NE(text_column_fix(CsvSpec{{"sepal_length", "note", "sepal_width"}, {"species"}, true})
                .find("leave it out with data.features: [sepal_length, sepal_width]"),
            std::string::npos);
  EXPECT_NE(text_column_fix(CsvSpec{{"note"}, {"species"}, true}).find("[note], or leave it out"), std::string::npos);
  // Every text column of the first row is named at once, so that one edit fixes them all: a
  // category column is one-hot encoded, a date column is named as one, with a way to make numbers of it.
  try {
    read_csv(format_fixture("bad/text_columns.csv"), CsvSpec{{}, {"load"}, false});
    ADD_FAILURE() << "read text columns as features";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("text_columns.csv:2: column 'when' (2): '2024-01-01 00:00:00' is not a number"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.remedy(),
              "columns 'when', 'city' hold text: one-hot encode 'city' with data.categorical: [city]; leave 'when' out with "
              "data.exclude: [when], or turn the dates in 'when' into numbers first, e.g. their hour or day of the year: pandas' "
              "pd.to_datetime(df['when']).dt.dayofyear");
  }
  try {  // a bad cell further down is a bad row
    read_csv(format_fixture("bad/bad_cell.csv"), CsvSpec{{}, {"label"}, true});
  } catch (const UsageError& e) {
    EXPECT_EQ(e.remedy(), "fix or remove that row; feature cells must be numbers");
  }
  try {
    read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{}, {}, true});
    ADD_FAILURE() << "read a CSV without a label column";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "data.labels is not set for the CSV source");
    EXPECT_EQ(e.remedy(), "set data.labels: label (the column named like a label); '" + format_fixture("csv/numeric.csv") +
                              "' has the columns a, b, label");
  }
  try {  // no column named like a label: the columns alone
    read_csv(format_fixture("csv/iris.csv"), CsvSpec{{}, {}, true});
    ADD_FAILURE() << "read a CSV without a label column";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.remedy().rfind("set data.labels to the label column's name; '", 0), 0u) << e.remedy();
  }
  const auto missing = usage_error([] { read_csv(format_fixture("csv/iris.csv"), CsvSpec{{}, {"specie"}, true}); });
  EXPECT_NE(missing.find("did you mean 'species'"), std::string::npos) << missing;
  // "b,label" is one name to YAML: the fix shows the list it meant.
  try {
    read_csv(format_fixture("csv/numeric.csv"), CsvSpec{{}, {"b,label"}, false});
    ADD_FAILURE() << "read a column named 'b,label'";
  } catch (const UsageError& e) {
    EXPECT_NE(e.remedy().find("several columns are a YAML list: data.labels: [b, label] (with --set, quote it: --set 'data.labels=[b, "
                              "label]'; on gputrain profile's command line: --labels b label)"),
              std::string::npos)
        << e.remedy();
  }
}

// A NaN (how pandas writes a missing value) or a number beyond float32 is named where it is, instead
// of surfacing as a diverged loss whose advice is to lower the learning rate.
TEST(Csv, NonFiniteCellsNameTheLineAndColumn) {
  // 'nan', as Python's csv writes a NaN, is pandas' mark of a missing value: named as one.
  const auto nan = usage_error([] { read_csv(format_fixture("bad/not_finite.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(nan.find("not_finite.csv:3: column 'b' (2): 'nan' marks a missing value; 1 of its 3 rows misses a value ('b' 1)"),
            std::string::npos)
      << nan;
  const auto huge = usage_error([] { read_csv(format_fixture("bad/not_finite.csv"), CsvSpec{{"a"}, {"label"}, true}); });
  EXPECT_NE(huge.find("not_finite.csv:4: column 'a' (1): '1e+39' is not a finite float32 number"), std::string::npos) << huge;
  const auto label = usage_error([] { read_csv(format_fixture("bad/not_finite.csv"), CsvSpec{{"label"}, {"b"}, false}); });
  EXPECT_NE(label.find("not_finite.csv:3: the label (column 'b'): 'nan' marks a missing value"), std::string::npos) << label;
  const auto infinite = usage_error([] { read_csv(format_fixture("bad/not_finite.csv"), CsvSpec{{"label"}, {"a"}, false}); });
  EXPECT_NE(infinite.find("not_finite.csv:4: label '1e+39' is not a finite float32 number"), std::string::npos) << infinite;
}

TEST(Csv, EmptyCellsAreCalledMissingValues) {
  const auto feature = usage_error([] { read_csv(format_fixture("bad/empty_cells.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(feature.find("empty_cells.csv:2: column 'b' (2) is empty: a missing value"), std::string::npos) << feature;
  const auto label = usage_error([] { read_csv(format_fixture("bad/empty_cells.csv"), CsvSpec{{"a"}, {"label"}, true}); });
  EXPECT_NE(label.find("empty_cells.csv:3: the label (column 'label') is empty: a missing value"), std::string::npos) << label;
  try {  // every row misses a value: dropping rows leaves nothing, so that is not offered
    read_csv(format_fixture("bad/empty_cells.csv"), CsvSpec{{}, {"label"}, true});
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("2 of its 2 rows miss a value ('b' 1, 'label' 1)"), std::string::npos) << e.what();
    EXPECT_EQ(e.remedy(), "missing values are not filled in for you, and every row misses one: fill them in");
  }
}

// The first missing value is named where it is, with how many the file has and in which columns,
// and the pandas line that drops those rows (missing in the columns gputrain reads: a column left
// out may miss what it likes), so that fixing them is not a run per row.
TEST(Csv, MissingValuesAreCountedWithThePandasLineThatDropsThoseRows) {
  const auto path = format_fixture("bad/missing_values.csv");
  const auto error_of = [](CsvSpec spec) -> std::pair<std::string, std::string> {
    try {
      read_csv(format_fixture("bad/missing_values.csv"), spec);
      ADD_FAILURE() << "read missing values";
    } catch (const UsageError& e) {
      return {e.what(), e.remedy()};
    }
    return {};
  };
  const auto complete = path.substr(0, path.size() - 4) + "-complete.csv";
  const auto [what, fix] = error_of(CsvSpec{{}, {"label"}, true});
  EXPECT_EQ(what, path + ":4: column 'b' (2) is empty: a missing value; 3 of its 10 rows miss a value ('b' 2, 'c' 1)");
  EXPECT_EQ(fix,
            "missing values are not filled in for you: fill them in, or drop those rows with python3 -c \"import pandas as pd; df = "
            "pd.read_csv('" +
                path + "'); df.dropna().to_csv('" + complete + "', index=False)\" and use " + complete +
                " (data.missing: drop does so as it reads), or have gputrain fill them: data.missing: mean (or zero), or leave the "
                "columns out with data.exclude: [b, c]");
  // R's NA is a missing value too, wherever it is the first.
  EXPECT_NE(error_of(CsvSpec{{"c"}, {"label"}, true})
                .first.find(":9: column 'c' (3): 'NA' marks a missing value; 1 of its 10 rows misses a value ('c' 1)"),
            std::string::npos);
  // Columns left out do not count, and the pandas line leaves their missing values alone.
  CsvSpec excluding{{}, {"label"}, true};
  excluding.exclude = {"c"};
  const auto [excluded_what, excluded_fix] = error_of(excluding);
  EXPECT_NE(excluded_what.find("2 of its 10 rows miss a value ('b' 2)"), std::string::npos) << excluded_what;
  EXPECT_NE(excluded_fix.find("df.dropna(subset=df.columns.difference(['c']))"), std::string::npos) << excluded_fix;
  EXPECT_NE(excluded_fix.find("leave the column out with data.exclude: [c, b]"), std::string::npos) << excluded_fix;
  const auto listed = error_of(CsvSpec{{"a", "b"}, {"label"}, true}).second;
  EXPECT_NE(listed.find("df.dropna(subset=['a', 'b', 'label'])"), std::string::npos) << listed;
  EXPECT_NE(listed.find("leave the column out with data.features: [a]"), std::string::npos) << listed;
}

// Numbers as strtod reads them (a sign, exponents, blanks and a CR around them, quotes), a value
// below float32's range as 0; what is not a number, or beyond float32, names the cell.
TEST(Csv, NumbersAreReadAsStrtodReadsThem) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-numbers.csv").string();
  const auto read = [&](const std::string& row) {
    std::ofstream(path) << "a,\"b,c\",label\r\n" << row << "\r\n";
    return read_csv(path, CsvSpec{{}, {"label"}, true});
  };
  const auto set = read(" +4.5e1 ,\"-.25\",1");
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({45.0f, -0.25f}).view({1, 2}))) << set.inputs;
  EXPECT_TRUE(at::equal(read("1e-400,2,1").inputs.select(1, 0), at::zeros({1}))) << "underflow is 0";
  EXPECT_NE(usage_error([&] { read("+-4,1,0"); }).find(":2: column 'a' (1): '+-4' is not a number"), std::string::npos);
  EXPECT_NE(usage_error([&] { read("0x10,1,0"); }).find("'0x10' is not a number"), std::string::npos);
  EXPECT_NE(usage_error([&] { read("1e400,1,0"); }).find("'1e400' is not a finite float32 number"), std::string::npos);
  EXPECT_NE(usage_error([&] { read("1,\"2\"\"\",0"); }).find("column 'b,c' (2): '2\"' is not a number"), std::string::npos);
  std::filesystem::remove(path);
}

// A quoted cell may hold line breaks (RFC 4180; Python's csv and pandas write free text so): the
// record runs on to its closing quote, and errors name the lines it spans. A quote inside a plain
// cell is text, as pandas reads it; a quote never closed names the line that opened it.
TEST(Csv, QuotedCellsMaySpanLinesAndUnclosedQuotesAreNamed) {
  const auto set = read_csv(format_fixture("csv/free_text.csv"), CsvSpec{{"a", "b"}, {"label"}, true});
  EXPECT_TRUE(at::equal(set.inputs, at::arange(1, 11, at::kFloat).view({5, 2}))) << set.inputs;
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0L, 1L, 0L, 1L, 0L}))) << set.targets;
  const auto note = usage_error([] { read_csv(format_fixture("csv/free_text.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(note.find("free_text.csv:2-3: column 'note' (2): 'line one\\nline two, with a comma' is not a number"), std::string::npos)
      << note;
  const auto spanning = usage_error([] { read_csv(format_fixture("bad/free_text_bad_cell.csv"), CsvSpec{{"a", "b"}, {"label"}, true}); });
  EXPECT_NE(spanning.find("free_text_bad_cell.csv:2-4: column 'b' (3): 'oops' is not a number"), std::string::npos) << spanning;
  const auto unclosed = usage_error([] { read_csv(format_fixture("bad/unclosed_quote.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(unclosed.find("unclosed_quote.csv:3: a quoted cell opened on this line is never closed"), std::string::npos) << unclosed;
}

TEST(Csv, ARowWithTheWrongCellCountIsNamed) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-short-row.csv").string();
  std::ofstream(path) << "a,b,label\n1,2,0\n3\n";
  const auto short_row = usage_error([&] { read_csv(path, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(short_row.find("gputrain-csv-short-row.csv:3: 1 cell, but the header has 3 columns"), std::string::npos) << short_row;
  std::filesystem::remove(path);
}

// A free-text cell in the wrong place is quoted on one line and cut at 60 characters.
TEST(Csv, ALongCellIsShortenedInTheError) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-long-cell.csv").string();
  std::ofstream(path) << "a,label\n\"" << std::string(100, 'x') << "\",0\n";
  const auto message = usage_error([&] { read_csv(path, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(message.find(":2: column 'a' (1): '" + std::string(60, 'x') + "...' is not a number"), std::string::npos) << message;
  std::filesystem::remove(path);
}
