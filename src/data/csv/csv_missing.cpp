#include "csv_missing.hpp"

#include <algorithm>
#include <vector>

#include "csv_number.hpp"
#include "csv_records.hpp"
#include "gputrain/core/parallel_tasks.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data::csv {
namespace {

// A name in a Python string literal.
std::string python_quoted(const std::string& name) {
  std::string out = "'";
  for (const char c : name) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// The missing values of one stretch of rows, counted per header column.
struct MissingCount {
  std::vector<std::int64_t> per_column;
  std::int64_t rows = 0, with_missing = 0;
  bool complete = true;  // false when a broken record cut the count short
};

void count_missing(const Stretch& stretch, const RowFormat& format, MissingCount& out) {
  out.per_column.assign(format.header.size(), 0);
  Records records(stretch.text, format.path, format.delimiter, stretch.first_line);
  Cells splitter;
  std::string_view record;
  try {
    while (records.next(record)) {
      ++out.rows;
      const auto& cells = splitter.split(record, format.delimiter);
      if (cells.size() != format.header.size()) continue;  // a row the parse refuses for its own reason
      bool missing = false;
      const auto count = [&](std::size_t c) {
        ++out.per_column[c];
        missing = true;
      };
      for (const auto c : format.feature_columns)
        if (is_missing(cells[c])) count(c);
      for (const auto c : format.label_columns)
        if (format.label_names ? cells[c].empty() : is_missing(cells[c])) count(c);
      if (missing) ++out.with_missing;
    }
  } catch (const UsageError&) {  // a broken record further on: its own error comes once this one is fixed
    out.complete = false;
  }
}

// Under data.missing (drop, mean, zero) the features were taken care of: what is left is a label,
// which is never guessed, so the counts and the fix speak of the label columns alone.
[[noreturn]] void throw_missing_labels(const MissingValue& first, const std::vector<std::int64_t>& per_column, const std::string& of_rows,
                                       const RowFormat& format) {
  std::vector<std::string> counts, labels;
  for (const auto c : format.label_columns) {
    if (per_column[c] > 0) counts.push_back("'" + format.header[c] + "' misses " + std::to_string(per_column[c]) + " of " + of_rows);
    labels.push_back(python_quoted(format.header[c]));
  }
  const auto [command, labelled] = pandas_rewrite(format, "", ".dropna(subset=[" + core::join(labels) + "])", "-labelled");
  throw UsageError(
      std::string(first.what()) + "; " + core::join(counts),
      "a sample needs its label (data.missing fills features only): drop the rows without one with " + command + " and use " + labelled);
}

}  // namespace

// Rows split cell by cell: only a file with a missing value pays for it (137 MB: 0.73 s on the two
// cores of the dev machine).
[[noreturn]] void throw_missing_values(const MissingValue& first, std::string_view rows, std::int64_t first_line, const RowFormat& format) {
  const auto& header = format.header;
  const auto stretches = cut_into_stretches(rows, format.delimiter, first_line, stretches_for(rows.size()));
  std::vector<MissingCount> counts(stretches.size());
  const auto n = static_cast<std::int64_t>(stretches.size());
  core::parallel_tasks(n, static_cast<int>(n), [&](std::int64_t i) {
    count_missing(stretches[static_cast<std::size_t>(i)], format, counts[static_cast<std::size_t>(i)]);
  });
  std::vector<std::int64_t> per_column(header.size(), 0);
  std::int64_t total = 0, with_missing = 0;
  bool counted_all = true;
  for (const auto& count : counts) {  // up to the first stretch cut short: the rows after it are not counted
    for (std::size_t c = 0; c < header.size(); ++c) per_column[c] += count.per_column[c];
    total += count.rows;
    with_missing += count.with_missing;
    if (!count.complete) {
      counted_all = false;
      break;
    }
  }
  const auto rows_counted = (counted_all ? "its " : "the first ") + std::to_string(total) + " rows";
  if (format.keep_missing) throw_missing_labels(first, per_column, rows_counted, format);
  std::vector<std::size_t> columns;
  for (std::size_t c = 0; c < header.size(); ++c)
    if (per_column[c] > 0) columns.push_back(c);
  std::stable_sort(columns.begin(), columns.end(), [&](std::size_t a, std::size_t b) { return per_column[a] > per_column[b]; });
  std::vector<std::string> where;
  for (std::size_t i = 0; i < columns.size() && i < 4; ++i)
    where.push_back("'" + header[columns[i]] + "' " + std::to_string(per_column[columns[i]]));
  if (columns.size() > 4) where.push_back("and " + std::to_string(columns.size() - 4) + " more columns");
  const auto of_rows = std::to_string(with_missing) + " of " + rows_counted;
  const auto what =
      std::string(first.what()) + "; " + of_rows + (with_missing == 1 ? " misses" : " miss") + " a value (" + core::join(where) + ")";

  // Drop the rows that miss a value gputrain reads, keeping rows that miss one only elsewhere.
  std::string subset;
  if (format.features_listed) {
    std::vector<std::string> read;
    for (const auto c : format.feature_columns) read.push_back(python_quoted(header[c]));
    for (const auto c : format.label_columns) read.push_back(python_quoted(header[c]));
    subset = "subset=[" + core::join(read) + "]";
  } else if (!format.excluded.empty() || !format.category_columns.empty()) {  // a missing category is none: its row stays
    std::vector<std::string> excluded;
    for (const auto& name : format.excluded) excluded.push_back(python_quoted(name));
    for (const auto c : format.category_columns) excluded.push_back(python_quoted(format.header[c]));
    subset = "subset=df.columns.difference([" + core::join(excluded) + "])";
  }
  std::vector<std::size_t> feature_columns;
  for (const auto c : columns)
    if (std::find(format.label_columns.begin(), format.label_columns.end(), c) == format.label_columns.end()) feature_columns.push_back(c);
  const bool only_features = feature_columns.size() == columns.size();
  const bool one = feature_columns.size() == 1;
  const auto setting = leaving_out(format, feature_columns);  // empty when no feature would be left
  const auto leave_out =
      only_features && !setting.empty() ? ", or leave the " + std::string(one ? "column" : "columns") + " out" + setting : "";
  // data.missing fills features (a label is never guessed).
  const auto fill = only_features ? std::string(", or have gputrain fill them: data.missing: mean (or zero)") : "";
  if (counted_all && with_missing == total)
    throw UsageError(what, "missing values are not filled in for you, and every row misses one: fill them in" + fill + leave_out);
  const auto [command, complete] = pandas_rewrite(format, "", ".dropna(" + subset + ")", "-complete");
  throw UsageError(what, "missing values are not filled in for you: fill them in, or drop those rows with " + command + " and use " +
                             complete + (only_features ? " (data.missing: drop does so as it reads)" : "") + fill + leave_out);
}

std::string missing_text(std::string_view cell) {
  return cell.empty() ? " is empty: a missing value" : ": '" + std::string(cell) + "' marks a missing value";
}

}  // namespace gputrain::data::csv
