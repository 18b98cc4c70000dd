#include "csv_rows.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <utility>

#include "csv_missing.hpp"
#include "csv_number.hpp"
#include "csv_records.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data::csv {
namespace {

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
  for (std::size_t i = 0; i < std::min(kShown, names.size()); ++i) shown.push_back(core::quoted(names[i]));
  return core::join(shown) + (names.size() > kShown ? ", ... (" + std::to_string(names.size()) + " classes)" : "");
}

// A cell as an error message quotes it: on one line (a free-text cell may hold line breaks) and
// at most 60 bytes of it.
std::string shown(std::string_view cell) { return core::quoted(cell, 60); }

// "column 'b' (2)": a feature column as errors name it, by its header cell and 1-based position.
std::string column_text(const std::vector<std::string>& header, std::size_t c) {
  return "column " + core::quoted(header[c], 80) + " (" + std::to_string(c + 1) + ")";
}

// A feature column that holds text: its first value is neither a number nor a bool.
struct TextColumn {
  std::size_t column;
  bool dates;       // that value is a date or a time
  bool categories;  // its values read as categories (reads_as_categories)
};

// The text columns among the features, told from the rows of `stretch` (the file's first): a
// column whose first rows miss a value is a text column too when its first value is text.
std::vector<TextColumn> text_columns(const Stretch& stretch, const RowFormat& format) {
  enum class Kind { unknown, numbers, text };
  const auto& columns = format.feature_columns;
  std::vector<Kind> kind(columns.size(), Kind::unknown);
  std::vector<bool> dates(columns.size(), false);
  std::vector<std::unordered_set<std::string>> values(columns.size());
  std::vector<std::int64_t> rows(columns.size(), 0);
  Records records(stretch.text, format.path, format.delimiter, stretch.first_line);
  Cells splitter;
  std::string_view record;
  try {
    while (records.next(record)) {
      const auto& cells = splitter.split(record, format.delimiter);
      if (cells.size() != format.header.size()) continue;
      for (std::size_t i = 0; i < columns.size(); ++i) {
        const auto cell = cells[columns[i]];
        if (kind[i] == Kind::numbers || is_missing(cell)) continue;
        if (kind[i] == Kind::unknown) {
          double value = 0;
          const bool number = parse_number(cell, value) || parse_boolean(cell, value);
          kind[i] = number ? Kind::numbers : Kind::text;
          dates[i] = !number && is_date_or_time(cell);
          if (number) continue;
        }
        ++rows[i];
        if (values[i].size() <= kMostCategories) values[i].emplace(cell);
      }
    }
  } catch (const UsageError&) {  // a broken record: the rows before it tell
  }
  std::vector<TextColumn> text;
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (kind[i] == Kind::text) text.push_back({columns[i], dates[i], reads_as_categories(values[i].size(), rows[i])});
  return text;
}

// The fix when the first row holds text: every text column named at once, so that one edit
// fixes them all. Categories are one-hot encoded with data.categorical; names, ids and free text
// are left out; dates are left out or made numbers with pandas.
std::string text_columns_remedy(const RowFormat& format, const Stretch& stretch) {
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
  std::string remedy = (one ? "column " : "columns ") + core::join_first(all_names, kNamedColumns) + (one ? " holds" : " hold") + " text: ";
  const auto them = [](const std::vector<std::size_t>& columns) { return columns.size() == 1 ? "it" : "them"; };
  if (!categories.empty()) {
    auto listed = format.categorical;
    for (const auto c : categories) listed.push_back(format.header[c]);
    remedy += "one-hot encode " + (others.empty() ? std::string(them(categories)) : core::join_first(category_names, kNamedColumns)) +
              " with data.categorical: [" + core::join_first(listed, kNamedColumns) + "]";
    if (others.empty()) return remedy + ", or leave " + them(categories) + " out" + leaving_out(format, categories);
    remedy += "; ";
  }
  remedy += "leave " + (categories.empty() ? std::string(them(others)) : core::join_first(other_names, kNamedColumns)) + " out" +
            leaving_out(format, others);
  if (free_text) remedy += " (a new value in most rows: names, ids or free text)";
  if (dates.empty()) return remedy;
  return remedy + ", or turn the dates in '" + core::join_first(dates, kNamedColumns, "', '") +
         "' into numbers first, e.g. their hour or day of the year: pandas' pd.to_datetime(df['" + dates.front() + "']).dt.dayofyear";
}

// A number as a report writes it ("45%", "$1,234.50", "1 234,5", "−3.5"): what it has, and the
// pandas line that makes plain numbers of its column; empty for other text.
std::pair<std::string, std::string> decorated_number_text(std::string_view cell, const RowFormat& format, std::size_t column) {
  const auto decorated = decorated_number(cell, format.delimiter);
  if (!decorated) return {};
  const auto& name = format.header[column];
  const std::string digits_only = decorated->decimal_comma ? ".str.replace('.', '', regex=False).str.replace(',', '.', regex=False)"
                                                           : ".str.replace(',', '', regex=False)";
  const auto [command, converted] = pandas_rewrite(format, "",
                                                   ".assign(**{'" + name + "': lambda d: d['" + name +
                                                       "'].astype(str).str.normalize('NFKC').str.replace('\\u2212', '-')" +
                                                       ".str.replace(r'[^0-9,.+-]', '', regex=True)" + digits_only + ".astype(float)})",
                                                   "-converted");
  return {": it is a number written with " + decorated->what,
          "save the column as plain numbers, or convert it" +
              std::string(decorated->what.find("percent") != std::string::npos ? " (its percent signs left out: 45% reads as 45)" : "") +
              ": " + command + ", then use " + converted};
}

// A number written for people ("3,5" with a decimal comma, "1,234.5" with thousands separators):
// what it is, appended to "'3,5' is not a number", and the fix, which converts the file with pandas
// (its read_csv takes both); empty for other text.
std::pair<std::string, std::string> foreign_number_text(std::string_view cell, const RowFormat& format, std::size_t column) {
  const auto kind = foreign_number(cell, format.delimiter);
  if (kind == ForeignNumber::none) return decorated_number_text(cell, format, column);
  const bool comma = kind == ForeignNumber::decimal_comma;
  const auto [command, converted] = pandas_rewrite(format, comma ? ", decimal=','" : ", thousands=','", "", "-converted");
  return {
      comma ? ": it has a decimal comma, as spreadsheets in many locales save numbers" : ": it has thousands separators",
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
      const char* number_end = parse_short_decimal(p, end, value);
      if (!number_end) {  // a bool column (True/False) is as common in pandas' files as numbers
        const char* const cell_end = std::find(p, end, format.delimiter);
        if (parse_boolean(std::string_view(p, static_cast<std::size_t>(cell_end - p)), value)) number_end = cell_end;
      }
      if (!number_end || (number_end != end && *number_end != format.delimiter)) break;
      row[slot] = static_cast<float>(value);  // within +-1e22 * 2^53: always a finite float
      p = number_end;
    } else {
      const char* const cell_end = std::find(p, end, format.delimiter);
      cells[c] = trimmed(std::string_view(p, static_cast<std::size_t>(cell_end - p)));
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

// The feature cells of a row the one-pass reader left (quoted cells, another cell count, a value
// it does not take), each checked; `first_row`: the file's first, where text means text columns.
void read_checked_features(const std::vector<std::string_view>& cells, const Records& records, const RowFormat& format,
                           const Stretch& stretch, bool first_row, std::vector<float>& features) {
  const auto& header = format.header;
  const auto cell_count = cells.size();
  if (cell_count != header.size())
    throw UsageError(records.where() + core::counted(static_cast<std::int64_t>(cell_count), "cell") + ", but the header has " +
                         core::counted(static_cast<std::int64_t>(header.size()), "column"),
                     "give every row one cell per header column");
  for (const auto c : format.feature_columns) {
    double value = 0;
    if (is_missing(cells[c])) {
      if (!format.keep_missing) throw MissingValue(records.where() + column_text(header, c) + missing_text(cells[c]), "");
      features.push_back(std::numeric_limits<float>::quiet_NaN());  // filled or dropped by csv_fill.cpp
      continue;
    }
    // A bool column (pandas writes True/False) is a 0/1 feature.
    if (!parse_number(cells[c], value) && !parse_boolean(cells[c], value)) {
      auto [what, remedy] = foreign_number_text(cells[c], format, c);
      if (remedy.empty()) remedy = "fix or remove that row; feature cells must be numbers";
      if (what.empty() && first_row) remedy = text_columns_remedy(format, stretch);  // text columns, not a bad row
      throw UsageError(records.where() + column_text(header, c) + ": " + shown(cells[c]) + " is not a number" + what, remedy);
    }
    // NaN or inf in the inputs would only surface later as a "diverged" loss, with the wrong advice.
    if (!std::isfinite(static_cast<float>(value)))
      throw UsageError(
          records.where() + column_text(header, c) + ": " + shown(cells[c]) + " is not a finite float32 number",
          "fill in or remove that row (missing values are not filled in for you), or leave the column out" + leaving_out(format, c));
    features.push_back(static_cast<float>(value));
  }
}

// A row's labels: one float per label column (regression), a class name, or a class id.
void read_labels(const std::vector<std::string_view>& cells, const Records& records, const RowFormat& format, ParsedRows& out) {
  const auto& header = format.header;
  const auto label_cell = [&](std::size_t c) -> std::string_view {
    // A class named "None" or "NA" is a name; a number's marker of a missing one is not.
    if (format.label_names ? cells[c].empty() : is_missing(cells[c]))
      throw MissingValue(records.where() + "the label (column " + core::quoted(header[c], 80) + ")" + missing_text(cells[c]), "");
    return cells[c];
  };
  const auto require_finite = [&](double value, std::string_view cell) {
    if (!std::isfinite(static_cast<float>(value)))
      throw UsageError(records.where() + "label " + shown(cell) + " is not a finite float32 number", "fill in or remove that row");
  };
  if (!format.classification) {  // one float target per label column
    for (const auto c : format.label_columns) {
      const auto cell = label_cell(c);
      double value = 0;
      if (!parse_number(cell, value)) {
        const auto [what, remedy] = foreign_number_text(cell, format, c);
        throw UsageError(records.where() + "column " + core::quoted(header[c], 80) + ": " + shown(cell) + " is not a number" + what,
                         remedy.empty() ? "regression labels must be numbers; to predict '" + header[c] +
                                              "' as classes (its values as names), set data.task: classification"
                                        : remedy);
      }
      require_finite(value, cell);
      out.labels.push_back(value);
    }
    return;
  }
  const auto label_column = format.label_columns.front();
  const auto cell = label_cell(label_column);
  if (format.label_names) {
    std::string name(cell);
    core::to_nfc(name);  // a class name written decomposed (macOS) and composed is one class
    if (format.known && !format.known->count(name)) {
      const auto classes = class_names_of(*format.known);
      throw UsageError(
          records.where() + "label " + shown(name) + " is not a class of the training file" + core::did_you_mean_among(name, classes),
          "the model learns the training file's classes only (" + class_list(classes) +
              "): leave the rows of other classes out of the validation file, or add such rows to the training file");
    }
    out.label_names.push_back(std::move(name));
    return;
  }
  double value = 0;
  if (!parse_number(cell, value))
    throw UsageError(records.where() + "column " + core::quoted(header[label_column], 80) + ": " + shown(cell) + " is not a number",
                     "use either class ids or class names in the whole label column");
  if (value < 0 || value != std::floor(value))
    throw UsageError(records.where() + "label " + shown(cell) + " is not a class id",
                     "class ids are integers >= 0; or set data.task: regression");
  require_finite(value, cell);
  out.labels.push_back(value);
}

void parse_rows(const Stretch& stretch, std::size_t index, const RowFormat& format, ParsedRows& out, ParseControl& control) {
  const auto& header = format.header;
  Records records(stretch.text, format.path, format.delimiter, stretch.first_line);
  Cells splitter;
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
    if (!plain) read_checked_features(cells, records, format, stretch, index == 0 && n == 0, out.features);
    for (std::size_t k = 0; k < format.category_columns.size(); ++k) out.categories[k].add(cells[format.category_columns[k]]);
    ++out.rows;
    read_labels(cells, records, format, out);
  }
}

}  // namespace

// The rows of `text` (whose first line is `first_line`), parsed on as many threads as LibTorch
// computes with (at::get_num_threads: OMP_NUM_THREADS, else the cores), a stretch of whole records
// each: 200,000 rows of a few hundred columns are half a gigabyte of text. This thread tells
// `progress` and passes a stop on. The first bad row in the file is the one thrown, as one thread
// would throw it. Plain threads: at::parallel_for is inline OpenMP, serial in a file built
// without -fopenmp.
std::vector<ParsedRows> parse_in_stretches(std::string_view text, std::int64_t first_line, const RowFormat& format,
                                           const ReadProgress& progress) {
  const auto stretches = cut_into_stretches(text, format.delimiter, first_line, stretches_for(text.size()));
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

}  // namespace gputrain::data::csv
