#include "gputrain/data/csv_format.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string_view>

#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"
#include "mapped_file.hpp"

namespace gputrain::data {
namespace {

// Splits one record into `cells`, reusing their strings' storage from the record before (a file of
// millions of cells would otherwise allocate each). A cell that starts with a double quote may
// hold the delimiter and line breaks ("" is a quote); a quote later in a cell is text, as in
// Python's csv and pandas (12" pipe). Blanks around a cell are not part of it. Returns the count.
std::size_t split_into(std::string_view line, char delimiter, std::vector<std::string>& cells) {
  std::size_t count = 0;
  const auto next_cell = [&]() -> std::string& {
    if (count == cells.size()) cells.emplace_back();
    auto& cell = cells[count++];
    cell.clear();
    return cell;
  };
  std::string* cell = &next_cell();
  bool cell_start = true;  // only blanks so far in this cell
  for (std::size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == delimiter) {
      cell = &next_cell();
      cell_start = true;
      ++i;
    } else if (c == '"' && cell_start) {  // a quoted stretch, to its closing quote
      for (++i; i < line.size(); ++i) {
        if (line[i] != '"') {
          *cell += line[i];
        } else if (i + 1 < line.size() && line[i + 1] == '"') {
          *cell += '"';
          ++i;
        } else {
          ++i;
          break;
        }
      }
      cell_start = false;
    } else if (cell_start && (c == ' ' || c == '\t')) {
      ++i;  // trimmed below anyway
    } else {  // a plain stretch to the delimiter, appended at once
      const auto end = std::min(line.find(delimiter, i), line.size());
      cell->append(line.data() + i, end - i);
      cell_start = false;
      i = end;
    }
  }
  for (std::size_t k = 0; k < count; ++k) {
    auto& text = cells[k];
    const auto last = text.find_last_not_of(" \t\r");
    text.erase(last == std::string::npos ? 0 : last + 1);
    text.erase(0, std::min(text.size(), text.find_first_not_of(" \t")));
  }
  return count;
}

// Where the record that starts at `pos` ends: its line's '\n' (or the text's end), or a later one
// while a quoted cell is open, reading quotes as split_into does. npos: a quote is never closed.
std::size_t record_end(std::string_view text, std::size_t pos, char delimiter) {
  const auto line_end = std::min(text.find('\n', pos), text.size());
  if (text.substr(pos, line_end - pos).find('"') == std::string_view::npos) return line_end;  // the usual line
  bool cell_start = true;
  for (std::size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') return i;
    if (c == delimiter) {
      cell_start = true;
    } else if (c == '"' && cell_start) {
      for (++i;; ++i) {
        if (i >= text.size()) return std::string_view::npos;
        if (text[i] != '"') continue;
        if (i + 1 < text.size() && text[i + 1] == '"') {
          ++i;
        } else {
          break;
        }
      }
      cell_start = false;
    } else if (c != ' ' && c != '\t') {
      cell_start = false;
    }
  }
  return text.size();
}

std::vector<std::string> split(std::string_view line, char delimiter) {
  std::vector<std::string> cells;
  cells.resize(split_into(line, delimiter, cells));
  return cells;
}

// A number as C's strtod reads it in the C locale, minus hexadecimal: an optional sign, digits,
// a '.', an exponent, inf or nan. std::from_chars needs no NUL-terminated copy and no locale.
bool parse_number(std::string_view text, double& value) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (!text.empty() && (text.front() == '+' || text.front() == '-')) return false;
  }
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end != text.data() + text.size()) return false;
  if (error == std::errc::result_out_of_range) {
    // Beyond a double: 1e-400 is 0 as float32 stores it; 1e400 is infinite, which the finite
    // checks then refuse with their own message.
    value = std::strtod(std::string(text).c_str(), nullptr);
    return true;
  }
  return error == std::errc();
}

// A header with one column holding ';' or a tab is a file written with that delimiter (spreadsheets
// in many locales save CSV with ';'); a file whose header has one real column keeps ','.
char detect_delimiter(std::string_view header_line, char configured) {
  if (configured != ',' || split(header_line, ',').size() > 1) return configured;
  for (const char candidate : {';', '\t', '|'})
    if (split(header_line, candidate).size() > 1) return candidate;
  return configured;
}

}  // namespace

TensorDataset read_csv(const std::string& path, const CsvSpec& spec, std::vector<std::string>* class_names, CsvColumns* columns) {
  const auto file = MappedFile::open(path);
  std::string_view text(reinterpret_cast<const char*>(file->data()), file->size());
  // Spreadsheets mark their exports: "CSV UTF-8" starts with a byte-order mark, which is not part
  // of the first column's name; "Unicode text" is UTF-16, which this reader cannot parse.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  if (text.substr(0, 2) == "\xFF\xFE" || text.substr(0, 2) == "\xFE\xFF")
    throw UsageError("'" + path + "' is UTF-16 text (as a spreadsheet's \"Unicode text\" export writes), not UTF-8",
                     "export it as \"CSV UTF-8\" (or convert it: iconv -f UTF-16 -t UTF-8 " + path + " > data.csv)");
  std::size_t pos = 0;
  std::int64_t line_number = 0;       // the record's first line, for errors
  std::int64_t next_line_number = 1;  // the next physical line's
  char delimiter = spec.delimiter;    // until the header shows another
  const auto next_line = [&](std::string_view& line) {
    while (pos < text.size()) {
      line_number = next_line_number;
      const auto end = record_end(text, pos, delimiter);
      if (end == std::string_view::npos)
        throw UsageError(path + ":" + std::to_string(line_number) + ": a quoted cell opened on this line is never closed",
                         "close the quote; a quote inside a quoted cell is written \"\"");
      line = text.substr(pos, end - pos);
      pos = end + 1;
      next_line_number += 1 + (line.find('"') == std::string_view::npos ? 0 : std::count(line.begin(), line.end(), '\n'));
      if (line.find_first_not_of(" \t\r") != std::string_view::npos) return true;  // blank lines are skipped
    }
    return false;
  };
  // "file:7" for a record on one line, "file:7-9" for one whose quoted cell spans lines.
  const auto record_at = [&] {
    const auto last = next_line_number - 1;
    return path + ":" + std::to_string(line_number) + (last > line_number ? "-" + std::to_string(last) : "") + ": ";
  };
  std::string_view line;
  if (!next_line(line)) throw UsageError("'" + path + "' is empty", "write a header row, then one row per sample");
  delimiter = detect_delimiter(line, spec.delimiter);
  const auto header = split(line, delimiter);
  const auto column_of = [&](const std::string& name, const std::string& key) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    // "a,b" for [a, b]: YAML reads it as one name.
    if (name.find(',') != std::string::npos) {
      const auto list = "[" + core::join(split(name, ',')) + "]";
      throw UsageError("'" + path + "' has no column '" + name + "' (" + key + ")",
                       "several columns are a YAML list: " + key + ": " + list + " (with --set, quote it: --set '" + key + "=" + list +
                           "'" + (key == "data.labels" ? "; on gputrain profile's command line: --labels " + core::join(split(name, ','), " ") : "") +
                           "); the header row names: " + core::join(header));
    }
    throw UsageError("'" + path + "' has no column '" + name + "' (" + key + ")" + [&]() -> std::string {
                       const auto close = core::closest_match(name, header);
                       return close ? "; did you mean '" + *close + "'?" : "";
                     }(),
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
  const std::size_t label_column = label_columns.front();  // classification's one
  const auto is_label = [&](std::size_t i) { return std::find(label_columns.begin(), label_columns.end(), i) != label_columns.end(); };
  std::vector<std::size_t> feature_columns, unnamed;
  if (spec.features.empty()) {
    // A column with no name is pandas' index (to_csv writes it first) or the empty cell after a
    // trailing delimiter: a row number or nothing, never a feature meant for the model.
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i].empty()) {
        unnamed.push_back(i + 1);
      } else if (!is_label(i)) {
        feature_columns.push_back(i);
      }
    }
  } else {
    for (const auto& name : spec.features) feature_columns.push_back(column_of(name, spec.features_origin));
  }
  if (feature_columns.empty()) throw UsageError("'" + path + "' has no feature columns besides the label", "add feature columns");
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
  if (columns) {
    columns->features.clear();
    for (const auto c : feature_columns) columns->features.push_back(header[c]);
    columns->unnamed = unnamed;
  }

  std::vector<float> features;
  std::vector<double> labels;
  std::vector<std::string> label_names;  // when the labels are names, not numbers
  std::vector<std::string> cells;
  while (next_line(line)) {
    const auto cell_count = split_into(line, delimiter, cells);
    if (cell_count != header.size())
      throw UsageError(record_at() + core::counted(static_cast<std::int64_t>(cell_count), "cell") + ", but the header has " +
                           core::counted(static_cast<std::int64_t>(header.size()), "column"),
                       "give every row one cell per header column");
    for (const auto c : feature_columns) {
      double value = 0;
      if (cells[c].empty())
        throw UsageError(record_at() + "column '" + header[c] + "' (" + std::to_string(c + 1) +
                             ") is empty: a missing value",
                         "fill in or remove that row (missing values are not filled in for you), or leave the column out "
                         "with data.features");
      if (!parse_number(cells[c], value))
        throw UsageError(record_at() + "column '" + header[c] + "' (" + std::to_string(c + 1) +
                             "): '" + cells[c] + "' is not a number",
                         "fix or remove that row; feature cells must be numbers");
      // NaN or inf in the inputs would only surface later as a "diverged" loss, with the wrong advice.
      if (!std::isfinite(static_cast<float>(value)))
        throw UsageError(record_at() + "column '" + header[c] + "' (" + std::to_string(c + 1) +
                             "): '" + cells[c] + "' is not a finite float32 number",
                         "fill in or remove that row (missing values are not filled in for you), or leave the column out "
                         "with data.features");
      features.push_back(static_cast<float>(value));
    }
    const auto label_cell = [&](std::size_t c) -> const std::string& {
      if (cells[c].empty()) throw UsageError(record_at() + "the label (column '" + header[c] + "') is empty", "fill in or remove that row");
      return cells[c];
    };
    const auto require_finite = [&](double value, const std::string& cell) {
      if (!std::isfinite(static_cast<float>(value)))
        throw UsageError(record_at() + "label '" + cell + "' is not a finite float32 number", "fill in or remove that row");
    };
    if (!spec.classification) {  // one float target per label column
      for (const auto c : label_columns) {
        const auto& cell = label_cell(c);
        double value = 0;
        if (!parse_number(cell, value))
          throw UsageError(record_at() + "column '" + header[c] + "': '" + cell + "' is not a number", "regression labels must be numbers");
        require_finite(value, cell);
        labels.push_back(value);
      }
      continue;
    }
    const auto& cell = label_cell(label_column);
    double value = 0;
    if (parse_number(cell, value) && label_names.empty()) {
      if (value < 0 || value != std::floor(value))
        throw UsageError(record_at() + "label '" + cell + "' is not a class id", "class ids are integers >= 0; or set data.task: regression");
      require_finite(value, cell);
      labels.push_back(value);
    } else if (labels.empty()) {
      label_names.push_back(cell);
    } else {
      throw UsageError(record_at() + "column '" + header[label_column] + "': '" + cell + "' is not a number",
                       "use either class ids or class names in the whole label column");
    }
  }
  const auto targets_per_row = static_cast<std::size_t>(spec.classification ? 1 : label_columns.size());
  const auto rows = static_cast<std::int64_t>(std::max(labels.size() / targets_per_row, label_names.size()));
  if (rows == 0) throw UsageError("'" + path + "' has a header but no rows", "add one row per sample");
  TensorDataset set;
  set.inputs = at::from_blob(features.data(), {rows, static_cast<std::int64_t>(feature_columns.size())}, at::kFloat).clone();
  if (!label_names.empty()) {
    std::map<std::string, std::int64_t> ids;
    if (class_names && !class_names->empty()) {
      for (std::size_t i = 0; i < class_names->size(); ++i) ids.emplace((*class_names)[i], static_cast<std::int64_t>(i));
    } else {
      for (const auto& n : label_names) ids.emplace(n, 0);
      std::int64_t next = 0;
      for (auto& [name, id] : ids) {
        id = next++;
        if (class_names) class_names->push_back(name);
      }
    }
    set.targets = at::empty({rows}, at::kLong);
    auto* t = set.targets.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < rows; ++i) {
      const auto found = ids.find(label_names[static_cast<std::size_t>(i)]);
      if (found == ids.end())
        throw UsageError("'" + path + "': label '" + label_names[static_cast<std::size_t>(i)] + "' is not a class of the training file",
                         "use the training file's class names in the validation file");
      t[i] = found->second;
    }
  } else {
    const auto values = at::from_blob(labels.data(), {rows, static_cast<std::int64_t>(targets_per_row)}, at::kDouble);
    set.targets = spec.classification ? values.squeeze(1).to(at::kLong) : values.to(at::kFloat);
  }
  return set;
}

}  // namespace gputrain::data
