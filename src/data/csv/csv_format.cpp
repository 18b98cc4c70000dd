#include "gputrain/data/csv_format.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "csv_categories.hpp"
#include "csv_missing.hpp"
#include "csv_number.hpp"
#include "csv_records.hpp"
#include "csv_row_format.hpp"
#include "csv_rows.hpp"
#include "csv_table.hpp"
#include "data/label_column.hpp"
#include "data/path_text.hpp"
#include "data/text_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data {
namespace {

using csv::MissingValue;
using csv::parse_in_stretches;
using csv::ParsedRows;
using csv::RowFormat;

// A header with one column holding ';' or a tab is a file written with that delimiter (spreadsheets
// in many locales save CSV with ';'); a file whose header has one real column keeps ','.
char detect_delimiter(std::string_view header_line, char configured) {
  if (configured != ',' || csv::split(header_line, ',').size() > 1) return configured;
  for (const char candidate : {';', '\t', '|'})
    if (csv::split(header_line, candidate).size() > 1) return candidate;
  return configured;
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

// data.categorical's columns, in the features' order. Each must be a feature: not a label (a
// label holds classes already), not left out, and listed when the features are.
template <typename ColumnOf>
std::vector<std::size_t> categorical_columns(const CsvSpec& spec, const std::vector<std::string>& header,
                                             const std::vector<std::size_t>& features, const std::vector<std::size_t>& labels,
                                             const std::vector<std::size_t>& excluded, bool features_listed, const ColumnOf& column_of) {
  const auto has = [](const std::vector<std::size_t>& columns, std::size_t c) {
    return std::find(columns.begin(), columns.end(), c) != columns.end();
  };
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

namespace {

// The header row, after the "sep=;" line that Excel reads (and some exports write) to name the
// delimiter, and the delimiter its cells are split by.
struct Header {
  std::vector<std::string> names;
  char delimiter = ',';
};

// The words of a line split by runs of blanks: "0.5  1.2 0" -> 3.
std::vector<std::string_view> blank_separated(std::string_view line) {
  std::vector<std::string_view> words;
  for (std::size_t at = line.find_first_not_of(" \t\r"); at != std::string_view::npos;) {
    const auto end = std::min(line.find_first_of(" \t\r", at), line.size());
    words.push_back(line.substr(at, end - at));
    at = line.find_first_not_of(" \t\r", end);
  }
  return words;
}

// numpy.savetxt's default, R's write.table and many .data files put spaces between cells, which a
// CSV reader (pandas' default too) takes for one column: named, with the pandas line that writes
// commas. Only when the header and the first row split into as many words.
void refuse_blank_separated(std::string_view header, const csv::Records& records, const std::string& path) {
  const auto words = blank_separated(header);
  if (words.size() < 2) return;
  auto peek = records;  // the first row, left for the reader
  std::string_view row;
  if (!peek.next(row) || blank_separated(row).size() != words.size() || row.find(',') != std::string_view::npos) return;
  const bool numbers = std::all_of(words.begin(), words.end(), [](std::string_view word) {
    double value = 0;
    return csv::parse_number(word, value);
  });
  throw UsageError(
      "'" + path + "' separates its cells by spaces, not commas, semicolons or tabs (its first line is " + core::quoted(header, 80) + ")",
      pandas_to_csv_fix("read_csv('" + path + "', sep=r'\\s+'" + (numbers ? ", header=None).add_prefix('c')" : ")"), path) +
          (numbers ? " (its first line is a row of numbers, not names: the columns are then c0 to c" + std::to_string(words.size() - 1) +
                         ", data.labels: c" + std::to_string(words.size() - 1) + " for the last)"
                   : ""));
}

Header read_header(csv::Records& records, const std::string& path, const CsvSpec& spec) {
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
  if (!named_delimiter && delimiter == ',' && line.find(',') == std::string_view::npos) refuse_blank_separated(line, records, path);
  records.set_delimiter(delimiter);
  return {csv::split(line, delimiter), delimiter};
}

// The header's names for a fix: a file of thousands of columns is not listed whole.
std::string header_names(const std::vector<std::string>& header) { return core::join_first(header, 40); }

// A header's columns by name: a name it lacks is an error that lists what it has.
struct FindColumn {
  const std::string& path;
  const std::vector<std::string>& header;

  std::size_t operator()(const std::string& name, const std::string& key) const {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    // The same name in another Unicode form: 'café' typed composed, written decomposed by a Mac.
    auto composed = name;
    core::to_nfc(composed);
    for (std::size_t i = 0; i < header.size(); ++i) {
      auto cell = header[i];
      core::to_nfc(cell);
      if (cell == composed) return i;
    }
    // "a,b" for [a, b]: YAML reads it as one name.
    if (name.find(',') != std::string::npos) {
      const auto list = "[" + core::join(csv::split(name, ',')) + "]";
      throw UsageError(
          "'" + path + "' has no column '" + name + "' (" + key + ")",
          "several columns are a YAML list: " + key + ": " + list + " (with --set, quote it: --set '" + key + "=" + list + "'" +
              (key == "data.labels" ? "; on gputrain profile's command line: --labels " + core::join(csv::split(name, ','), " ") : "") +
              "); the header row names: " + header_names(header));
    }
    // numpy.savetxt and to_csv(header=False) write no header: the first row is then taken for one.
    if (std::all_of(header.begin(), header.end(), [](const std::string& cell) {
          double value = 0;
          return csv::parse_number(cell, value);
        }))
      throw UsageError("'" + path + "' has no column '" + name + "' (" + key + "): its first row (" + core::join_first(header, 6) +
                           ") holds numbers, not column names, so the file has no header row",
                       "add a header row naming the columns, '" + name +
                           "' among them (pandas reads the file with pd.read_csv(path, header=None), and df.to_csv(path, index=False) "
                           "writes one)");
    throw UsageError("'" + path + "' has no column '" + name + "' (" + key + ")" + core::did_you_mean_among(name, header),
                     "the header row names: " + header_names(header));
  }
};

// The label and feature columns, and those left out (data.exclude) or without a name.
struct Columns {
  std::vector<std::size_t> labels, features, unnamed, excluded;
};

Columns choose_columns(const std::string& path, const CsvSpec& spec, const std::vector<std::string>& header, const FindColumn& column_of) {
  if (spec.labels.empty()) {
    const auto named = column_named_like_a_label(header);
    throw UsageError(
        "data.labels is not set for the CSV source",
        (named.empty() ? "set data.labels to the label column's name" : "set data.labels: " + named + " (the column named like a label)") +
            "; '" + path + "' has the columns " + header_names(header));
  }
  if (spec.classification && spec.labels.size() > 1)
    throw UsageError("data.labels names " + std::to_string(spec.labels.size()) + " columns (" + core::join(spec.labels) +
                         "), but a classification has one label column",
                     "set data.labels to the class column, or data.task: regression to predict each column as a target");
  Columns chosen;
  auto& label_columns = chosen.labels;
  for (const auto& name : spec.labels) label_columns.push_back(column_of(name, "data.labels"));
  const auto is_label = [&](std::size_t i) { return std::find(label_columns.begin(), label_columns.end(), i) != label_columns.end(); };
  auto &feature_columns = chosen.features, &unnamed = chosen.unnamed, &excluded = chosen.excluded;
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
  return chosen;
}

// A column read twice is a slip; a label among the features hands the model its answer; a name
// the header gives twice would be read from the first column of that name everywhere.
// Counted in maps, not by a scan per column: a CSV of 300,000 columns took minutes in scans.
void check_columns(const std::string& path, const CsvSpec& spec, const std::vector<std::string>& header, const Columns& chosen) {
  const auto& label_columns = chosen.labels;
  const auto& feature_columns = chosen.features;
  std::unordered_map<std::size_t, int> label_uses, feature_uses;
  for (const auto c : label_columns) ++label_uses[c];
  for (const auto c : feature_columns) ++feature_uses[c];
  for (const auto c : label_columns)
    if (label_uses[c] > 1) throw UsageError("data.labels names column '" + header[c] + "' twice", "list each label column once");
  for (const auto c : feature_columns) {
    if (label_uses.count(c) != 0)
      throw UsageError("column '" + header[c] + "' of '" + path + "' is in data.features and data.labels: the model would read its answer",
                       "leave the label column out of data.features");
    if (feature_uses[c] > 1) throw UsageError("data.features names column '" + header[c] + "' twice", "list each feature column once");
  }
  // Columns are found by name (a validation file's, the weights' data.features, predict.py): a
  // name the header gives twice would be read from the first column of that name everywhere.
  std::unordered_map<std::string_view, std::vector<std::size_t>> places;
  for (std::size_t i = 0; i < header.size(); ++i) places[header[i]].push_back(i + 1);
  auto read_columns = feature_columns;
  read_columns.insert(read_columns.end(), label_columns.begin(), label_columns.end());
  for (const auto read : read_columns) {
    const auto& at = places[header[read]];
    if (at.size() < 2) continue;
    std::vector<std::string> positions;
    for (const auto p : at) positions.push_back(std::to_string(p));
    const auto& name = header[read];
    const bool a_label = std::find(spec.labels.begin(), spec.labels.end(), name) != spec.labels.end();
    throw UsageError("'" + path + "' names column '" + name + "' " + std::to_string(positions.size()) + " times in its header (columns " +
                         core::join(positions) + "), and gputrain finds columns by name",
                     "give each its own name in the header (pandas reads them as '" + name + "' and '" + name + ".1')" +
                         (a_label || !spec.features.empty() ? "" : ", or leave them out with data.exclude: [" + name + "]"));
  }
}

// The parsed stretches as the table's chunks, its categories numbered over the file, and the
// targets (class ids, class names still to number, or regression values).
std::vector<std::string> gather_rows(std::vector<ParsedRows>& parts, const CsvSpec& spec, const RowFormat& format,
                                     const std::vector<std::string>& header, const std::vector<std::size_t>& category_columns,
                                     csv::Table& table) {
  const auto& path = table.path;
  const auto& label_columns = format.label_columns;
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
  if (!format.label_names) table.targets = spec.classification ? values.squeeze(1).to(at::kLong) : values.to(at::kFloat);
  return label_names;
}

}  // namespace

csv::Table csv::read_table(const std::string& path, const CsvSpec& spec, std::vector<std::string>* class_names,
                           const ReadProgress& progress) {
  const auto file = TextFile::open(path, [&](std::uint64_t read, std::uint64_t total) {
    if (progress) progress(path + ", inflating", read, total);
  });
  const std::string_view text = file.text();
  csv::Records records(text, path, spec.delimiter);
  const auto [header, delimiter] = read_header(records, path, spec);
  const FindColumn column_of{path, header};
  const auto chosen = choose_columns(path, spec, header, column_of);
  check_columns(path, spec, header, chosen);
  const auto& label_columns = chosen.labels;
  const auto& feature_columns = chosen.features;
  const bool features_listed = spec.features_origin == "data.features" && !spec.features.empty();
  const auto category_columns =
      categorical_columns(spec, header, feature_columns, label_columns, chosen.excluded, features_listed, column_of);
  std::vector<std::size_t> number_columns;
  for (const auto c : feature_columns)
    if (std::find(category_columns.begin(), category_columns.end(), c) == category_columns.end()) number_columns.push_back(c);
  csv::Table table;
  table.path = path;
  table.unnamed = chosen.unnamed;
  if (!file.not_utf8().empty()) table.not_utf8.push_back("'" + path + "' (" + file.not_utf8() + ")");
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
                   spec.categorical,
                   spec.missing != "error"};
  for (std::size_t k = 0; k < number_columns.size(); ++k) format.feature_slot[number_columns[k]] = static_cast<int>(k);

  std::vector<ParsedRows> parts;
  try {
    parts = parse_in_stretches(rows_text, records.next_line(), format, progress);
  } catch (const MissingValue& first) {
    csv::throw_missing_values(first, rows_text, records.next_line(), format);
  }

  auto label_names = gather_rows(parts, spec, format, header, category_columns, table);
  if (!format.label_names) return table;
  if (ids.empty()) {  // a training file: ids in the sorted order of the names
    for (const auto& n : label_names) ids.emplace(n, 0);
    std::int64_t next = 0;
    for (auto& [name, id] : ids) {
      id = next++;
      if (class_names) class_names->push_back(name);
    }
  }
  table.targets = at::empty({table.rows}, at::kLong);
  auto* t = table.targets.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < table.rows; ++i) t[i] = ids.at(label_names[static_cast<std::size_t>(i)]);
  return table;
}

TensorDataset read_csv(const std::string& path, const CsvSpec& spec, std::vector<std::string>* class_names, CsvColumns* columns,
                       const ReadProgress& progress) {
  return csv::finish_table(csv::read_table(path, spec, class_names, progress), spec, columns);
}

}  // namespace gputrain::data
