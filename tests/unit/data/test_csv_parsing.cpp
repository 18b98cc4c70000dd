// How a CSV's text becomes records, and how a large file is cut into stretches of whole records
// parsed side by side: the same tensors and the same first error as one thread gives.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "data/csv/csv_number.hpp"
#include "data/csv/csv_records.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/data/csv_format.hpp"

using namespace gputrain;
using namespace gputrain::data;

namespace {

std::vector<std::string> records_of(std::string_view text, std::vector<std::string>* where = nullptr) {
  csv::Records records(text, "f.csv", ',');
  std::vector<std::string> out;
  std::string_view record;
  while (records.next(record)) {
    out.emplace_back(record);
    if (where) where->push_back(records.where());
  }
  return out;
}

// LibTorch's thread count for one scope, as OMP_NUM_THREADS would set it.
class Threads {
 public:
  explicit Threads(int count) : before_(at::get_num_threads()) { at::set_num_threads(count); }
  ~Threads() { at::set_num_threads(before_); }

 private:
  int before_;
};

}  // namespace

TEST(CsvRecords, AQuotedCellRunsOnAcrossLinesAndBlankLinesAreSkipped) {
  std::vector<std::string> where;
  const auto records = records_of("a,b\n\n1,\"x\ny\"\n2,\"\"\"\"\n3,12\" pipe\n", &where);
  ASSERT_EQ(records, (std::vector<std::string>{"a,b", "1,\"x\ny\"", "2,\"\"\"\"", "3,12\" pipe"}));
  EXPECT_EQ(where, (std::vector<std::string>{"f.csv:1: ", "f.csv:3-4: ", "f.csv:5: ", "f.csv:6: "}));
  EXPECT_EQ(csv::split("2,\"\"\"\"", ','), (std::vector<std::string>{"2", "\""}));
  EXPECT_EQ(csv::split(" 3 , 12\" pipe ", ','), (std::vector<std::string>{"3", "12\" pipe"}));
  EXPECT_THROW(records_of("a,b\n1,\"open\n2,3\n"), UsageError);
}

TEST(CsvRecords, StretchesEndOnRecordsAndKnowTheirFirstLine) {
  std::string text;
  for (int i = 0; i < 30; ++i) text += i % 4 == 1 ? std::to_string(i) + ",\"two\nlines\"\n" : std::to_string(i) + ",one\n";
  const auto stretches = csv::cut_into_stretches(text, ',', 2, 3);
  ASSERT_EQ(stretches.size(), 3u);
  std::string joined;
  std::int64_t line = 2;
  for (const auto& stretch : stretches) {
    EXPECT_EQ(stretch.first_line, line);
    EXPECT_TRUE(stretch.text.empty() || stretch.text.back() == '\n');
    // Every stretch starts with a record's first cell: a row number, never "lines\"".
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(stretch.text.front()))) << stretch.text;
    joined += std::string(stretch.text);
    line += std::count(stretch.text.begin(), stretch.text.end(), '\n');
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(csv::cut_into_stretches(text, ',', 1, 1).size(), 1u);
  // A quote never closed ends the cutting; the last stretch holds it, for its parse to report.
  const auto open = csv::cut_into_stretches("1,a\n2,\"b\n3,c\n4,d\n", ',', 1, 4);
  EXPECT_NE(open.back().text.find("2,\"b\n3,c\n4,d\n"), std::string_view::npos) << open.back().text;
}

// A file big enough for several stretches reads the same on 1 and on 3 threads, and its first bad
// row in the file (not the first a thread reaches) is the one named, with its line.
TEST(Csv, ALargeFileReadsTheSameOnSeveralThreads) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-large.csv").string();
  const auto write = [&](const std::vector<int>& bad_rows, std::vector<std::int64_t>* bad_lines = nullptr) {
    std::ofstream out(path);
    out << "id,a,b,note,label\n";
    std::int64_t line = 2;
    for (int i = 0; i < 250000; ++i) {
      const bool bad = std::find(bad_rows.begin(), bad_rows.end(), i) != bad_rows.end();
      if (bad && bad_lines) bad_lines->push_back(line);
      out << i << ',' << i * 0.25 << ',' << (bad ? "oops" : std::to_string(-i)) << ','
          << (i % 9 == 0   ? "\"a note,\nover two lines\""
              : i < 150000 ? "plain text"
                           : "later text")
          << ',' << (i % 5 == 0 ? "cat" : "dog") << '\n';
      line += i % 9 == 0 ? 2 : 1;
    }
  };
  const CsvSpec spec{{"a", "b"}, {"label"}, true};
  write({});
  ASSERT_GT(std::filesystem::file_size(path), 8u << 20) << "too small for 3 stretches";
  std::vector<std::string> one_names, three_names;
  const auto one = [&] {
    Threads threads(1);
    return read_csv(path, spec, &one_names);
  }();
  const auto three = [&] {
    Threads threads(3);
    return read_csv(path, spec, &three_names);
  }();
  ASSERT_EQ(three.size(), 250000);
  EXPECT_TRUE(at::equal(one.inputs, three.inputs));
  EXPECT_TRUE(at::equal(one.targets, three.targets));
  EXPECT_EQ(three_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(one_names, three_names);
  EXPECT_EQ(three.inputs[249999][1].item<float>(), -249999.0f);

  // A column of categories: each stretch numbers the ones it meets, the file's are sorted.
  CsvSpec by_category{{"a", "note"}, {"label"}, true};
  by_category.categorical = {"note"};
  CsvColumns columns;
  const auto categories = [&] {
    Threads threads(3);
    return read_csv(path, by_category, nullptr, &columns);
  }();
  EXPECT_EQ(columns.inputs, (std::vector<std::string>{"a", "note=a note,\nover two lines", "note=later text", "note=plain text"}));
  const auto row = at::arange(250000, at::kLong);
  const auto noted = row.remainder(9).eq(0);
  EXPECT_TRUE(at::equal(categories.inputs.select(1, 1), noted.to(at::kFloat)));
  EXPECT_TRUE(at::equal(categories.inputs.select(1, 2), (~noted & row.ge(150000)).to(at::kFloat)));
  EXPECT_TRUE(at::equal(categories.inputs.select(1, 3), (~noted & row.lt(150000)).to(at::kFloat)));

  std::vector<std::int64_t> bad_lines;
  write({200000, 140000}, &bad_lines);  // in the last stretch and in the middle one
  try {
    Threads threads(3);
    read_csv(path, spec);
    ADD_FAILURE() << "read a bad cell";
  } catch (const UsageError& e) {
    const auto expected = "gputrain-csv-large.csv:" + std::to_string(bad_lines.front()) + ": column 'b' (3): 'oops' is not a number";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << "got " << e.what() << "\nexpected " << expected;
  }
  std::filesystem::remove(path);
}

// Every number is the double strtod gives, bit for bit: the short decimals of the fast path (Clinger's)
// and everything the general parser takes over (long mantissas, large exponents, inf, nan).
TEST(CsvNumber, ReadsEveryNumberAsStrtodDoes) {
  std::mt19937_64 random(7);
  std::vector<std::string> texts = {"0",
                                    "-0",
                                    "1.",
                                    ".5",
                                    "-.25",
                                    "1e5",
                                    "1E-5",
                                    "+3",
                                    "2.5e+3",
                                    "9007199254740993",
                                    "123456789012345678901",
                                    "0.30000000000000004",
                                    "1e22",
                                    "1e23",
                                    "1e-22",
                                    "1e-23",
                                    "4.9e-324",
                                    "1.7976931348623157e308",
                                    "1e400",
                                    "1e-400",
                                    "inf",
                                    "-Infinity",
                                    "nan",
                                    "00000000000000000000001.5"};
  for (int i = 0; i < 20000; ++i) {
    std::ostringstream text;
    const auto mantissa = random() % (i % 3 == 0 ? 1000000000000000000ULL : 100000000ULL);
    const int point = static_cast<int>(random() % 12), exponent = static_cast<int>(random() % 61) - 30;
    auto digits = std::to_string(mantissa);
    if (point < static_cast<int>(digits.size())) digits.insert(digits.size() - static_cast<std::size_t>(point), ".");
    text << (random() % 2 ? "-" : "") << digits;
    if (i % 4 == 0) text << (random() % 2 ? 'e' : 'E') << exponent;
    texts.push_back(text.str());
  }
  for (const auto& text : texts) {
    double ours = 0;
    ASSERT_TRUE(csv::parse_number(text, ours)) << text;
    const double theirs = std::strtod(text.c_str(), nullptr);
    if (std::isnan(theirs)) {
      EXPECT_TRUE(std::isnan(ours)) << text;
    } else {
      EXPECT_EQ(std::memcmp(&ours, &theirs, sizeof ours), 0) << text << ": " << ours << " vs strtod's " << theirs;
    }
  }
  for (const char* bad : {"", "-", ".", "e5", "1e", "1e+", "1.5x", "0x10", "+-1", "1 2", "--1", "1..2"}) {
    double value = 0;
    EXPECT_FALSE(csv::parse_number(bad, value)) << bad;
  }
}

TEST(CsvNumber, BooleansAreOneAndZeroInTheSpellingsToolsWrite) {
  for (const char* text : {"True", "TRUE", "true"}) {
    double value = -1;
    EXPECT_TRUE(csv::parse_boolean(text, value) && value == 1) << text;
  }
  for (const char* text : {"False", "FALSE", "false"}) {
    double value = -1;
    EXPECT_TRUE(csv::parse_boolean(text, value) && value == 0) << text;
  }
  for (const char* text : {"", "yes", "T", "tRue", "True ", "1"}) {
    double value = 0;
    EXPECT_FALSE(csv::parse_boolean(text, value)) << text;
  }
}

TEST(CsvNumber, NumbersWrittenForPeopleAreToldApartFromText) {
  using csv::ForeignNumber;
  for (const char* text : {"3,5", "-0,25", "+12,0001", "1234,5"})
    EXPECT_EQ(csv::foreign_number(text, ';'), ForeignNumber::decimal_comma) << text;
  for (const char* text : {"3,5", "1234,567", "1,2345"}) EXPECT_EQ(csv::foreign_number(text, ','), ForeignNumber::decimal_comma) << text;
  for (const char* text : {"1,234.5", "12,345,678", "-1,000", "999,999.", "1,234,567.125"})
    EXPECT_EQ(csv::foreign_number(text, ','), ForeignNumber::thousands_separators) << text;
  // "1,234" is a decimal comma where cells are separated by ';', thousands where by ','.
  EXPECT_EQ(csv::foreign_number("1,234", ';'), ForeignNumber::decimal_comma);
  EXPECT_EQ(csv::foreign_number("1,234", ','), ForeignNumber::thousands_separators);
  EXPECT_EQ(csv::foreign_number("12,345,678", ';'), ForeignNumber::thousands_separators);
  for (const char* text : {"", ",5", "3,", "a,b", "1,23,456", "1234,567,890", "1,234.5.6", "3,5e2", "1.5", "n/a"})
    EXPECT_EQ(csv::foreign_number(text, ','), ForeignNumber::none) << text;
}

// A number as a report or a form writes it is told from text, with what it has: a column of them
// was "text: one-hot encode it".
TEST(CsvNumber, NumbersWithSignsGroupsOrOtherDigitsAreToldFromText) {
  const std::vector<std::tuple<const char*, char, const char*, bool>> numbers = {
      {"45%", ',', "a percent sign", false},
      {"12.5 %", ',', "a percent sign", false},
      {"$1,234.50", ',', "a currency sign", false},
      {"1.234,50 \xE2\x82\xAC", ';', "a currency sign and a decimal comma", true},
      {"\xC2\xA3"
       "12",
       ',', "a currency sign", false},
      {"1 234,5", ';', "digits grouped by spaces and a decimal comma", true},
      {"1\xC2\xA0"
       "234\xC2\xA0"
       "567",
       ',', "digits grouped by spaces", false},
      {"\xE2\x88\x92"
       "3.5",
       ',', "a typeset minus sign (U+2212)", false},
      {"\xEF\xBC\x91\xEF\xBC\x92", ',', "full-width digits", false},
  };
  for (const auto& [text, delimiter, what, comma] : numbers) {
    const auto found = csv::decorated_number(text, delimiter);
    ASSERT_TRUE(found) << text;
    EXPECT_EQ(found->what, what) << text;
    EXPECT_EQ(found->decimal_comma, comma) << text;
  }
  for (const char* text : {"3.5", "3,5", "1,234.5", "room 12", "12 34", "12 3456", "%", "$", "45%%x", "A1", "", "1 2"})
    EXPECT_FALSE(csv::decorated_number(text, ',')) << text;
}

TEST(CsvNumber, MissingValuesAreWhatPandasTakesForNaN) {
  for (const char* text : {"", "NA", "N/A", "n/a", "nan", "NaN", "-nan", "NULL", "null", "None", "#N/A", "<NA>", "1.#QNAN"})
    EXPECT_TRUE(csv::is_missing(text)) << text;
  for (const char* text : {"0", "na", "none", "missing", "-", "?", " NA", "inf"}) EXPECT_FALSE(csv::is_missing(text)) << text;
}

TEST(CsvNumber, DatesAndTimesAreToldApartFromOtherText) {
  for (const char* text : {"2024-03-01", "2024/3/1", "01/03/2024", "1.3.2024", "1.3.24", "2024-03-01 14:05:00", "2024-03-01T14:05:00.5Z",
                           "2024-03-01T14:05:00+01:00", "2024-03-01 14:05:00-0130", "14:05", "9:30:15", "2024-03-01 9:30"})
    EXPECT_TRUE(csv::is_date_or_time(text)) << text;
  for (const char* text : {"", "2024", "1.5", "3.14", "1-2-3", "2024-03", "2024-03/01", "Paris", "14:5", "2024-03-01 noon", "2024-03-01T",
                           "12345-01-01", "1:2:3", "2024-03-01 14:05:00 UTC"})
    EXPECT_FALSE(csv::is_date_or_time(text)) << text;
}

// The reading thread reports how far the parse is, and an exception from the report (a stop
// signal) ends the read: the parsing threads stop and the exception reaches the caller.
TEST(Csv, ProgressIsReportedAndAThrowFromItStopsTheRead) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-progress.csv").string();
  {
    std::ofstream out(path);
    out << "a,b,label\n";
    for (int i = 0; i < 200000; ++i) out << i << ',' << i * 0.5 << ',' << i % 2 << '\n';
  }
  const auto size = std::filesystem::file_size(path);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> reports;
  const auto set =
      read_csv(path, CsvSpec{{}, {"label"}, true}, nullptr, nullptr, [&](const std::string& file, std::uint64_t done, std::uint64_t total) {
        EXPECT_EQ(file, path);
        reports.emplace_back(done, total);
      });
  EXPECT_EQ(set.size(), 200000);
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.front().first, 0u);
  for (const auto& [done, total] : reports) {
    EXPECT_EQ(total, size - std::string("a,b,label\n").size());  // the rows' bytes, after the header
    EXPECT_LE(done, total);
  }
  struct Stop {};
  EXPECT_THROW(read_csv(path, CsvSpec{{}, {"label"}, true}, nullptr, nullptr,
                        [](const std::string&, std::uint64_t, std::uint64_t) { throw Stop{}; }),
               Stop);
  std::filesystem::remove(path);
}

// Plain rows are read in one pass, others (quotes, blanks, long numbers) cell by cell: the same
// values either way, labels trimmed alike.
TEST(Csv, OnePassRowsAndCellByCellRowsReadTheSame) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-one-pass.csv").string();
  const auto read = [&](const std::string& rows, std::vector<std::string>* names) {
    std::ofstream(path) << "a,b,label\n" << rows;
    return read_csv(path, CsvSpec{{}, {"label"}, true}, names);
  };
  std::vector<std::string> plain_names, other_names;
  const auto plain = read("1.5,-2e3,cat \r\n0.1,7,  dog\n12345678901234567890,3,cat\nTrue,FALSE,dog\n", &plain_names);
  const auto other = read("\"1.5\", -2e3 ,\"cat\"\r\n 0.1,\"7\",dog\n\"12345678901234567890\",3, cat\n\"True\",FALSE ,dog\n", &other_names);
  EXPECT_TRUE(at::equal(plain.inputs, other.inputs)) << plain.inputs << other.inputs;
  EXPECT_TRUE(at::equal(plain.targets, other.targets));
  EXPECT_EQ(plain_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(plain_names, other_names);
  EXPECT_EQ(plain.inputs[0][1].item<float>(), -2000.0f);
  EXPECT_TRUE(at::equal(plain.inputs[3], at::tensor({1.0f, 0.0f})));
  std::filesystem::remove(path);
}
