#include "gputrain/data/csv_format.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>

#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"
#include "csv_categories.hpp"
#include "csv_missing.hpp"
#include "csv_number.hpp"
#include "csv_records.hpp"
#include "csv_row_format.hpp"
#include "csv_table.hpp"
#include "text_file.hpp"

namespace gputrain::data {
namespace {

using csv::leaving_out;
using csv::MissingValue;
using csv::missing_text;
using csv::pandas_rewrite;
using csv::RowFormat;

// The training file's class names (a map's keys: sorted).
std::vector<std::string> class_names_of(const std::map<std::string, std::int64_t>& ids) {
  std::vector<std::string> names;
  for (const auto& [name, id] : ids) names.push_back(name);
  return names;
}

// "'cat', 'dog'" or "'a', 'b', ... (40 classes)": the training file's class names, for an error.
std::string class_list(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 8;
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < std::min(kShown, names.size()); ++i) shown.push_back("'" + names[i] + "'");
  return core::join(shown) + (names.size() > kShown ? ", ... (" + std::to_string(names.size()) + " classes)" : "");
}

// A header with one column holding ';' or a tab is a file written with that delimiter (spreadsheets
// in many locales save CSV with ';'); a file whose header has one real column keeps ','.
char detect_delimiter(std::string_view header_line, char configured) {
  if (configured != ',' || csv::split(header_line, ',').size() > 1) return configured;
  for (const char candidate : {';', '\t', '|'})
    if (csv::split(header_line, candidate).size() > 1) return candidate;
  return configured;
}

// A cell as an error message quotes it: on one line (a free-text cell may hold line breaks) and
// at most 60 characters of it.
std::string shown(std::string_view cell) {
  std::string text;
  for (const char c : cell.substr(0, 60)) {
    if (c == '\n') {
      text += "\\n";
    } else if (c == '\r') {
      text += "\\r";
    } else {
      text += c;
    }
  }
  return cell.size() > 60 ? text + "..." : text;
}

// "column 'b' (2)": a feature column as errors name it, by its header cell and 1-based position.
std::string column_text(const std::vector<std::string>& header, std::size_t c) {
  return "column '" + header[c] + "' (" + std::to_string(c + 1) + ")";
}

// A feature column that holds text: its first value is neither a number nor a bool.
struct TextColumn {
  std::size_t column;
  bool dates;       // that value is a date or a time
  bool categories;  // its values read as categories (csv::reads_as_categories)
};

// The text columns among the features, told from the rows of `stretch` (the file's first): a
// column whose first rows miss a value is a text column too when its first value is text.
std::vector<TextColumn> text_columns(const csv::Stretch& stretch, const RowFormat& format) {
  enum class Kind { unknown, numbers, text };
  const auto& columns = format.feature_columns;
  std::vector<Kind> kind(columns.size(), Kind::unknown);
  std::vector<bool> dates(columns.size(), false);
  std::vector<std::unordered_set<std::string>> values(columns.size());
  std::vector<std::int64_t> rows(columns.size(), 0);
  csv::Records records(stretch.text, format.path, format.delimiter, stretch.first_line);
  csv::Cells splitter;
  std::string_view record;
  try {
    while (records.next(record)) {
      const auto& cells = splitter.split(record, format.delimiter);
      if (cells.size() != format.header.size()) continue;
      for (std::size_t i = 0; i < columns.size(); ++i) {
        const auto cell = cells[columns[i]];
        if (kind[i] == Kind::numbers || csv::is_missing(cell)) continue;
        if (kind[i] == Kind::unknown) {
          double value = 0;
          const bool number = csv::parse_number(cell, value) || csv::parse_boolean(cell, value);
          kind[i] = number ? Kind::numbers : Kind::text;
          dates[i] = !number && csv::is_date_or_time(cell);
          if (number) continue;
        }
        ++rows[i];
        if (values[i].size() <= csv::kMostCategories) values[i].emplace(cell);
      }
    }
  } catch (const UsageError&) {  // a broken record: the rows before it tell
  }
  std::vector<TextColumn> text;
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (kind[i] == Kind::text) text.push_back({columns[i], dates[i], csv::reads_as_categories(values[i].size(), rows[i])});
  return text;
}

// The fix when the first row holds text: every text column named at once, so that one edit
// fixes them all. Categories are one-hot encoded with data.categorical; names, ids and free text
// are left out; dates are left out or made numbers with pandas.
std::string text_columns_remedy(const RowFormat& format, const csv::Stretch& stretch) {
  const auto text = text_columns(stretch, format);
  std::vector<std::size_t> categories, others;
  std::vector<std::string> all_names, category_names, other_names, dates;
  bool free_text = false;
  for (const auto& column : text) {
    const auto name = "'" + format.header[column.column] + "'";
    all_names.push_back(name);
    if (column.categories && !column.dates) {
      categories.push_back(column.column);
      category_names.push_back(name);
    } else {
      others.push_back(column.column);
      other_names.push_back(name);
      if (column.dates) dates.push_back(format.header[column.column]);
      free_text = free_text || !column.dates;
    }
  }
  const bool one = all_names.size() == 1;
  std::string remedy = (one ? "column " : "columns ") + core::join(all_names, ", ") + (one ? " holds" : " hold") + " text: ";
  const auto them = [](const std::vector<std::size_t>& columns) { return columns.size() == 1 ? "it" : "them"; };
  if (!categories.empty()) {
    auto listed = format.categorical;
    for (const auto c : categories) listed.push_back(format.header[c]);
    remedy += "one-hot encode " + (others.empty() ? std::string(them(categories)) : core::join(category_names, ", ")) +
              " with data.categorical: [" + core::join(listed) + "]";
    if (others.empty()) return remedy + ", or leave " + them(categories) + " out" + leaving_out(format, categories);
    remedy += "; ";
  }
  remedy += "leave " + (categories.empty() ? std::string(them(others)) : core::join(other_names, ", ")) + " out" + leaving_out(format, others);
  if (free_text) remedy += " (a new value in most rows: names, ids or free text)";
  if (dates.empty()) return remedy;
  return remedy + ", or turn the dates in '" + core::join(dates, "', '") +
         "' into numbers first, e.g. their hour or day of the year: pandas' pd.to_datetime(df['" + dates.front() + "']).dt.dayofyear";
}

// A number written for people ("3,5" with a decimal comma, "1,234.5" with thousands separators):
// what it is, appended to "'3,5' is not a number", and the fix, which converts the file with pandas
// (its read_csv takes both); empty for other text.
std::pair<std::string, std::string> foreign_number_text(std::string_view cell, const RowFormat& format) {
  const auto kind = csv::foreign_number(cell, format.delimiter);
  if (kind == csv::ForeignNumber::none) return {};
  const bool comma = kind == csv::ForeignNumber::decimal_comma;
  const auto [command, converted] = pandas_rewrite(format, comma ? ", decimal=','" : ", thousands=','", "", "-converted");
  return {comma ? ": it has a decimal comma, as spreadsheets in many locales save numbers" : ": it has thousands separators",
          std::string(comma ? "save the file with decimal points, or convert it" : "save the numbers without separators, or convert the file") +
              ": " + command + ", then use " + converted};
}

// The usual row in one pass: no quotes, no blanks, every feature cell a short decimal, every cell
// where the header says. Appends the features and sets the other cells (the labels); false, with
// nothing appended, for any other row, which the general path then reads (and names what is
// wrong with it). Cutting a row into cells and then parsing them walks its bytes twice.
bool read_plain_row(std::string_view record, const RowFormat& format, std::vector<float>& features, std::vector<std::string_view>& cells) {
  if (record.find('"') != std::string_view::npos) return false;
  const auto row_start = features.size();
  features.resize(row_start + format.feature_columns.size());
  float* const row = features.data() + row_start;
  const char* p = record.data();
  const char* const end = p + record.size() - (!record.empty() && record.back() == '\r' ? 1 : 0);
  const auto columns = format.feature_slot.size();
  for (std::size_t c = 0; c < columns; ++c) {
    if (c > 0) {
      if (p == end || *p != format.delimiter) break;
      ++p;
    }
    const int slot = format.feature_slot[c];
    if (slot >= 0) {
      double value = 0;
      const char* number_end = csv::parse_short_decimal(p, end, value);
      if (!number_end) {  // a bool column (True/False) is as common in pandas' files as numbers
        const char* const cell_end = std::find(p, end, format.delimiter);
        if (csv::parse_boolean(std::string_view(p, static_cast<std::size_t>(cell_end - p)), value)) number_end = cell_end;
      }
      if (!number_end || (number_end != end && *number_end != format.delimiter)) break;
      row[slot] = static_cast<float>(value);  // within +-1e22 * 2^53: always a finite float
      p = number_end;
    } else {
      const char* const cell_end = std::find(p, end, format.delimiter);
      cells[c] = csv::trimmed(std::string_view(p, static_cast<std::size_t>(cell_end - p)));
      p = cell_end;
    }
    if (c + 1 == columns && p == end) return true;
  }
  features.resize(row_start);
  return false;
}

// What the reading thread and the parsing threads share: bytes parsed so far, for the progress;
// a stop the reading thread raises when its progress callback throws; the first stretch with a
// bad row, since the stretches after it need not be parsed to the end (its error wins).
struct ParseControl {
  std::atomic<std::uint64_t> parsed_bytes{0};
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> first_failed{std::numeric_limits<std::size_t>::max()};
};

// The rows of one stretch; stretches are parsed side by side and joined in file order.
struct ParsedRows {
  std::vector<float> features;
  std::vector<double> labels;            // class ids, or regression targets (one per label column)
  std::vector<std::string> label_names;  // classes by name
  std::vector<csv::CategoryCodes> categories;  // per column of categories
  std::int64_t rows = 0;
  std::exception_ptr error;              // the stretch's first bad row
};

void parse_rows(const csv::Stretch& stretch, std::size_t index, const RowFormat& format, ParsedRows& out, ParseControl& control) {
  const auto& header = format.header;
  csv::Records records(stretch.text, format.path, format.delimiter, stretch.first_line);
  csv::Cells splitter;
  std::vector<std::string_view> plain_cells(header.size());
  std::string_view record;
  std::size_t counted_to = 0;  // the stretch's bytes already added to control.parsed_bytes
  out.categories.resize(format.category_columns.size());
  for (std::uint64_t n = 0; records.next(record); ++n) {
    if (n % 4096 == 0) {
      control.parsed_bytes += records.offset() - counted_to;
      counted_to = records.offset();
      if (control.stop || control.first_failed < index) return;
    }
    if (out.features.empty()) {  // room for the stretch's rows, if they are about as long as its first
      const auto rows = stretch.text.size() / (record.size() + 1) + 1;
      out.features.reserve(rows * format.feature_columns.size());
      out.labels.reserve(rows * format.label_columns.size());
    }
    const bool plain = read_plain_row(record, format, out.features, plain_cells);
    const auto& cells = plain ? plain_cells : splitter.split(record, format.delimiter);
    if (!plain) {  // every check, for the rows the one-pass reader leaves
      const auto cell_count = cells.size();
      if (cell_count != header.size())
        throw UsageError(records.where() + core::counted(static_cast<std::int64_t>(cell_count), "cell") + ", but the header has " +
                             core::counted(static_cast<std::int64_t>(header.size()), "column"),
                         "give every row one cell per header column");
      for (const auto c : format.feature_columns) {
        double value = 0;
        if (csv::is_missing(cells[c])) throw MissingValue(records.where() + column_text(header, c) + missing_text(cells[c]), "");
        // A bool column (pandas writes True/False) is a 0/1 feature.
        if (!csv::parse_number(cells[c], value) && !csv::parse_boolean(cells[c], value)) {
          auto [what, remedy] = foreign_number_text(cells[c], format);
          if (remedy.empty()) remedy = "fix or remove that row; feature cells must be numbers";
          if (what.empty() && index == 0 && n == 0) remedy = text_columns_remedy(format, stretch);  // text columns, not a bad row
          throw UsageError(records.where() + column_text(header, c) + ": '" + shown(cells[c]) + "' is not a number" + what, remedy);
        }
        // NaN or inf in the inputs would only surface later as a "diverged" loss, with the wrong advice.
        if (!std::isfinite(static_cast<float>(value)))
          throw UsageError(records.where() + column_text(header, c) + ": '" + shown(cells[c]) +
                               "' is not a finite float32 number",
                           "fill in or remove that row (missing values are not filled in for you), or leave the column out" + leaving_out(format, c));
        out.features.push_back(static_cast<float>(value));
      }
    }
    for (std::size_t k = 0; k < format.category_columns.size(); ++k) out.categories[k].add(cells[format.category_columns[k]]);
    ++out.rows;
    const auto label_cell = [&](std::size_t c) -> std::string_view {
      // A class named "None" or "NA" is a name; a number's marker of a missing one is not.
      if (format.label_names ? cells[c].empty() : csv::is_missing(cells[c]))
        throw MissingValue(records.where() + "the label (column '" + header[c] + "')" + missing_text(cells[c]), "");
      return cells[c];
    };
    const auto require_finite = [&](double value, std::string_view cell) {
      if (!std::isfinite(static_cast<float>(value)))
        throw UsageError(records.where() + "label '" + shown(cell) + "' is not a finite float32 number", "fill in or remove that row");
    };
    if (!format.classification) {  // one float target per label column
      for (const auto c : format.label_columns) {
        const auto cell = label_cell(c);
        double value = 0;
        if (!csv::parse_number(cell, value)) {
          const auto [what, remedy] = foreign_number_text(cell, format);
          throw UsageError(records.where() + "column '" + header[c] + "': '" + shown(cell) + "' is not a number" + what,
                           remedy.empty() ? "regression labels must be numbers; to predict '" + header[c] +
                                                "' as classes (its values as names), set data.task: classification"
                                          : remedy);
        }
        require_finite(value, cell);
        out.labels.push_back(value);
      }
      continue;
    }
    const auto label_column = format.label_columns.front();
    const auto cell = label_cell(label_column);
    if (format.label_names) {
      std::string name(cell);
      if (format.known && !format.known->count(name)) {
        const auto classes = class_names_of(*format.known);
        throw UsageError(records.where() + "label '" + shown(name) + "' is not a class of the training file" + core::did_you_mean_among(name, classes),
                         "the model learns the training file's classes only (" + class_list(classes) +
                             "): leave the rows of other classes out of the validation file, or add such rows to the training file");
      }
      out.label_names.push_back(std::move(name));
      continue;
    }
    double value = 0;
    if (!csv::parse_number(cell, value))
      throw UsageError(records.where() + "column '" + header[label_column] + "': '" + shown(cell) + "' is not a number",
                       "use either class ids or class names in the whole label column");
    if (value < 0 || value != std::floor(value))
      throw UsageError(records.where() + "label '" + shown(cell) + "' is not a class id", "class ids are integers >= 0; or set data.task: regression");
    require_finite(value, cell);
    out.labels.push_back(value);
  }
}

// Whether the classes are names: the first row's label that is not missing is not a number (a
// first label "NA" says nothing either way). A fault of a row is left for the parse to report
// where it is.
bool labels_are_names(std::string_view rows, const std::string& path, char delimiter, std::size_t label_column) {
  csv::Records records(rows, path, delimiter);
  std::string_view record;
  for (int looked = 0; looked < 1000; ++looked) {
    try {
      if (!records.next(record)) return false;
    } catch (const UsageError&) {
      return false;
    }
    const auto cells = csv::split(record, delimiter);
    if (label_column >= cells.size()) return false;
    if (csv::is_missing(cells[label_column])) continue;
    double value = 0;
    return !csv::parse_number(cells[label_column], value);
  }
  return false;
}

// The rows of `text` (whose first line is `first_line`), parsed on as many threads as LibTorch
// computes with (at::get_num_threads: OMP_NUM_THREADS, else the cores), a stretch of whole records
// each: 200,000 rows of a few hundred columns are half a gigabyte of text. This thread tells
// `progress` and passes a stop on. The first bad row in the file is the one thrown, as one thread
// would throw it. Plain threads: at::parallel_for is inline OpenMP, serial in a file built
// without -fopenmp.
std::vector<ParsedRows> parse_in_stretches(std::string_view text, std::int64_t first_line, const RowFormat& format, const ReadProgress& progress) {
  const auto stretches = csv::cut_into_stretches(text, format.delimiter, first_line, csv::stretches_for(text.size()));
  std::vector<ParsedRows> parts(stretches.size());
  ParseControl control;
  std::mutex mutex;
  std::condition_variable finished;
  std::size_t running = stretches.size();
  const auto parse = [&](std::size_t i) {
    try {
      parse_rows(stretches[i], i, format, parts[i], control);
    } catch (...) {
      parts[i].error = std::current_exception();
      auto first = control.first_failed.load();
      while (i < first && !control.first_failed.compare_exchange_weak(first, i)) {
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    --running;
    finished.notify_one();
  };
  if (progress) progress(format.path, 0, text.size());
  std::vector<std::thread> parsers;
  for (std::size_t i = 0; i < stretches.size(); ++i) parsers.emplace_back(parse, i);
  std::exception_ptr stopped;
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(100), [&] { return running == 0; })) {
      if (!progress || stopped) continue;
      lock.unlock();
      try {
        progress(format.path, control.parsed_bytes.load(), text.size());
      } catch (...) {
        stopped = std::current_exception();
        control.stop = true;
      }
      lock.lock();
    }
  }
  for (auto& parser : parsers) parser.join();
  if (stopped) std::rethrow_exception(stopped);
  for (const auto& part : parts)
    if (part.error) std::rethrow_exception(part.error);
  return parts;
}

// data.categorical's columns, in the features' order. Each must be a feature: not a label (a
// label holds classes already), not left out, and listed when the features are.
template <typename ColumnOf>
std::vector<std::size_t> categorical_columns(const CsvSpec& spec, const std::vector<std::string>& header, const std::vector<std::size_t>& features,
                                             const std::vector<std::size_t>& labels, const std::vector<std::size_t>& excluded, bool features_listed,
                                             const ColumnOf& column_of) {
  const auto has = [](const std::vector<std::size_t>& columns, std::size_t c) { return std::find(columns.begin(), columns.end(), c) != columns.end(); };
  std::vector<std::size_t> named;
  for (const auto& name : spec.categorical) {
    const auto c = column_of(name, "data.categorical");
    if (has(named, c)) throw UsageError("data.categorical names column '" + name + "' twice", "list each column of categories once");
    if (has(labels, c))
      throw UsageError("column '" + name + "' is in data.categorical and data.labels",
                       spec.classification ? "leave it out of data.categorical: a label column holds classes already, by name or by id"
                                           : "leave it out of data.categorical: a regression target is a number");
    if (has(excluded, c))
      throw UsageError("column '" + name + "' is in data.categorical and data.exclude",
                       "keep it in one: data.categorical reads it as one-hot columns, data.exclude leaves it out");
    if (!has(features, c)) {
      std::vector<std::string> listed;
      for (const auto f : features) listed.push_back(header[f]);
      listed.push_back(name);
      if (features_listed)
        throw UsageError("data.categorical names column '" + name + "', which data.features does not list",
                         "add it to data.features: [" + core::join(listed) + "]");
      throw UsageError("data.categorical names column '" + name + "', which is not among the features (" + spec.features_origin + ")",
                       "read the same columns in every file");
    }
    named.push_back(c);
  }
  std::vector<std::size_t> in_order;
  for (const auto c : features)
    if (has(named, c)) in_order.push_back(c);
  return in_order;
}

// A validation file's categories of `column`: the training file's; null for a training file.
const std::vector<std::string>* known_categories(const CsvSpec& spec, const std::string& column) {
  if (spec.categories.empty()) return nullptr;
  for (const auto& known : spec.categories)
    if (known.column == column) return &known.values;
  throw UsageError("column '" + column + "' is in data.categorical, but the training data's categories do not name it",
                   "read the validation file with the training file's settings");
}

}  // namespace

csv::Table csv::read_table(const std::string& path, const CsvSpec& spec, std::vector<std::string>* class_names, const ReadProgress& progress) {
  const auto file = TextFile::open(path, [&](std::uint64_t read, std::uint64_t total) {
    if (progress) progress(path + ", inflating", read, total);
  });
  const std::string_view text = file.text();
  csv::Records records(text, path, spec.delimiter);
  std::string_view line;
  if (!records.next(line)) throw UsageError("'" + path + "' is empty", "write a header row, then one row per sample");
  // Excel reads, and some exports write, a first line "sep=;" that names the delimiter, before the header.
  std::optional<char> named_delimiter;
  if (const auto hint = line.substr(0, line.find_last_not_of(" \r") + 1); hint.size() == 5 && hint.substr(0, 4) == "sep=") {
    named_delimiter = hint[4];
    if (!records.next(line))
      throw UsageError("'" + path + "' has only its \"sep=\" line, no header row", "write a header row after it, then one row per sample");
  }
  const char delimiter = named_delimiter ? *named_delimiter : detect_delimiter(line, spec.delimiter);
  records.set_delimiter(delimiter);
  const auto header = csv::split(line, delimiter);
  const auto column_of = [&](const std::string& name, const std::string& key) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    // "a,b" for [a, b]: YAML reads it as one name.
    if (name.find(',') != std::string::npos) {
      const auto list = "[" + core::join(csv::split(name, ',')) + "]";
      throw UsageError("'" + path + "' has no column '" + name + "' (" + key + ")",
                       "several columns are a YAML list: " + key + ": " + list + " (with --set, quote it: --set '" + key + "=" + list +
                           "'" + (key == "data.labels" ? "; on gputrain profile's command line: --labels " + core::join(csv::split(name, ','), " ") : "") +
                           "); the header row names: " + core::join(header));
    }
    throw UsageError("'" + path + "' has no column '" + name + "' (" + key + ")" + core::did_you_mean_among(name, header),
                     "the header row names: " + core::join(header));
  };
  if (spec.labels.empty())
    throw UsageError("data.labels is not set for the CSV source", "set data.labels to the label column's name; '" + path +
                                                                       "' has the columns " + core::join(header));
  if (spec.classification && spec.labels.size() > 1)
    throw UsageError("data.labels names " + std::to_string(spec.labels.size()) + " columns (" + core::join(spec.labels) +
                         "), but a classification has one label column",
                     "set data.labels to the class column, or data.task: regression to predict each column as a target");
  std::vector<std::size_t> label_columns;
  for (const auto& name : spec.labels) label_columns.push_back(column_of(name, "data.labels"));
  const auto is_label = [&](std::size_t i) { return std::find(label_columns.begin(), label_columns.end(), i) != label_columns.end(); };
  std::vector<std::size_t> feature_columns, unnamed, excluded;
  if (spec.features.empty()) {
    for (const auto& name : spec.exclude) {  // by name: every column so named
      column_of(name, "data.exclude");       // names a missing one
      for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i] == name) excluded.push_back(i);
    }
    // A column with no name is pandas' index (to_csv writes it first) or the empty cell after a
    // trailing delimiter: a row number or nothing, never a feature meant for the model.
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i].empty()) {
        unnamed.push_back(i + 1);
      } else if (!is_label(i) && std::find(excluded.begin(), excluded.end(), i) == excluded.end()) {
        feature_columns.push_back(i);
      }
    }
  } else {
    for (const auto& name : spec.features) feature_columns.push_back(column_of(name, spec.features_origin));
  }
  if (feature_columns.empty())
    throw UsageError("'" + path + "' has no feature columns besides the label" + (spec.exclude.empty() ? "" : " and data.exclude"),
                     spec.exclude.empty() ? "add feature columns" : "leave some columns out of data.exclude");
  // A column read twice is a slip; a label among the features hands the model its answer.
  for (std::size_t i = 0; i < label_columns.size(); ++i)
    if (std::count(label_columns.begin(), label_columns.end(), label_columns[i]) > 1)
      throw UsageError("data.labels names column '" + header[label_columns[i]] + "' twice", "list each label column once");
  for (std::size_t i = 0; i < feature_columns.size(); ++i) {
    if (is_label(feature_columns[i]))
      throw UsageError("column '" + header[feature_columns[i]] + "' of '" + path + "' is in data.features and data.labels: the model would read its answer",
                       "leave the label column out of data.features");
    if (std::count(feature_columns.begin(), feature_columns.end(), feature_columns[i]) > 1)
      throw UsageError("data.features names column '" + header[feature_columns[i]] + "' twice", "list each feature column once");
  }
  // Columns are found by name (a validation file's, the weights' data.features, predict.py): a
  // name the header gives twice would be read from the first column of that name everywhere.
  auto read_columns = feature_columns;
  read_columns.insert(read_columns.end(), label_columns.begin(), label_columns.end());
  for (const auto read : read_columns) {
    std::vector<std::string> positions;
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == header[read]) positions.push_back(std::to_string(i + 1));
    if (positions.size() < 2) continue;
    const auto& name = header[read];
    const bool a_label = std::find(spec.labels.begin(), spec.labels.end(), name) != spec.labels.end();
    throw UsageError("'" + path + "' names column '" + name + "' " + std::to_string(positions.size()) + " times in its header (columns " +
                         core::join(positions) + "), and gputrain finds columns by name",
                     "give each its own name in the header (pandas reads them as '" + name + "' and '" + name + ".1')" +
                         (a_label || !spec.features.empty() ? "" : ", or leave them out with data.exclude: [" + name + "]"));
  }
  const bool features_listed = spec.features_origin == "data.features" && !spec.features.empty();
  const auto category_columns = categorical_columns(spec, header, feature_columns, label_columns, excluded, features_listed, column_of);
  std::vector<std::size_t> number_columns;
  for (const auto c : feature_columns)
    if (std::find(category_columns.begin(), category_columns.end(), c) == category_columns.end()) number_columns.push_back(c);
  csv::Table table;
  table.path = path;
  table.unnamed = unnamed;
  for (const auto c : feature_columns) {
    table.features.push_back(header[c]);
    const auto k = std::find(category_columns.begin(), category_columns.end(), c) - category_columns.begin();
    table.category_of.push_back(k < static_cast<std::ptrdiff_t>(category_columns.size()) ? static_cast<int>(k) : -1);
  }

  // A validation file's class names are the training file's, with their ids.
  std::map<std::string, std::int64_t> ids;
  if (class_names)
    for (std::size_t i = 0; i < class_names->size(); ++i) ids.emplace((*class_names)[i], static_cast<std::int64_t>(i));
  const auto rows_text = text.substr(records.offset());
  RowFormat format{path,
                   delimiter,
                   header,
                   number_columns,
                   label_columns,
                   spec.classification,
                   spec.classification && labels_are_names(rows_text, path, delimiter, label_columns.front()),
                   ids.empty() ? nullptr : &ids,
                   std::vector<int>(header.size(), -1),
                   features_listed,
                   spec.exclude,
                   feature_columns,
                   category_columns,
                   spec.categorical};
  for (std::size_t k = 0; k < number_columns.size(); ++k) format.feature_slot[number_columns[k]] = static_cast<int>(k);

  std::vector<ParsedRows> parts;
  try {
    parts = parse_in_stretches(rows_text, records.next_line(), format, progress);
  } catch (const MissingValue& first) {
    csv::throw_missing_values(first, rows_text, records.next_line(), format);
  }

  std::int64_t rows = 0;
  for (const auto& part : parts) rows += part.rows;
  if (rows == 0) throw UsageError("'" + path + "' has a header but no rows", "add one row per sample");
  for (std::size_t k = 0; k < category_columns.size(); ++k) {  // the stretches' categories, numbered over the file
    std::vector<csv::Coded> pieces;
    for (auto& part : parts) pieces.push_back(part.categories[k].take());
    table.categories.push_back(csv::merge_categories(std::move(pieces), known_categories(spec, header[category_columns[k]])));
  }
  const auto targets_per_row = static_cast<std::int64_t>(spec.classification ? 1 : label_columns.size());
  table.rows = rows;
  auto values = at::empty({format.label_names ? 0 : rows, targets_per_row}, at::kDouble);
  std::vector<std::string> label_names;
  auto* value_at = values.data_ptr<double>();
  for (auto& part : parts) {  // the features stay where the parse put them, until finish_table copies them
    table.chunks.push_back({std::move(part.features), part.rows});
    value_at = std::copy(part.labels.begin(), part.labels.end(), value_at);
    std::move(part.label_names.begin(), part.label_names.end(), std::back_inserter(label_names));
    part = ParsedRows{};
  }
  if (!format.label_names) {
    table.targets = spec.classification ? values.squeeze(1).to(at::kLong) : values.to(at::kFloat);
    return table;
  }
  if (ids.empty()) {  // a training file: ids in the sorted order of the names
    for (const auto& n : label_names) ids.emplace(n, 0);
    std::int64_t next = 0;
    for (auto& [name, id] : ids) {
      id = next++;
      if (class_names) class_names->push_back(name);
    }
  }
  table.targets = at::empty({rows}, at::kLong);
  auto* t = table.targets.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < rows; ++i) t[i] = ids.at(label_names[static_cast<std::size_t>(i)]);
  return table;
}

TensorDataset read_csv(const std::string& path, const CsvSpec& spec, std::vector<std::string>* class_names, CsvColumns* columns,
                       const ReadProgress& progress) {
  return csv::finish_table(csv::read_table(path, spec, class_names, progress), spec, columns);
}

}  // namespace gputrain::data
