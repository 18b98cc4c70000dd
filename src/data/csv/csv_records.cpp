#include "csv_records.hpp"

#include <ATen/Parallel.h>  // at::get_num_threads

#include <algorithm>

#include "gputrain/core/error.hpp"

namespace gputrain::data::csv {
namespace {

// The closing quote of the quoted cell opened at `open` ("" inside is a quote, not the end);
// npos when it never closes.
std::size_t closing_quote(std::string_view text, std::size_t open) {
  for (auto i = open + 1; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    if (i + 1 < text.size() && text[i + 1] == '"') {
      ++i;
    } else {
      return i;
    }
  }
  return std::string_view::npos;
}

// Where the record that starts at `pos` ends: its line's '\n' (or the text's end), or a later one
// while a quoted cell is open, reading quotes as Cells::split does. npos: a quote is never closed.
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
      i = closing_quote(text, i);
      if (i == std::string_view::npos) return i;
      cell_start = false;
    } else if (c != ' ' && c != '\t') {
      cell_start = false;
    }
  }
  return text.size();
}

// The lines a record spans: one, plus the line breaks inside its quoted cells.
std::int64_t lines_of(std::string_view record) {
  return 1 + (record.find('"') == std::string_view::npos ? 0 : std::count(record.begin(), record.end(), '\n'));
}

// A record with quotes, cell by cell into `cells` (strings reused): a cell that starts with a
// quote runs to its closing quote, across delimiters and line breaks, "" inside being a quote.
std::size_t unquote_into(std::string_view record, char delimiter, std::vector<std::string>& cells) {
  std::size_t count = 0;
  const auto next_cell = [&]() -> std::string& {
    if (count == cells.size()) cells.emplace_back();
    auto& cell = cells[count++];
    cell.clear();
    return cell;
  };
  std::string* cell = &next_cell();
  bool cell_start = true;  // only blanks so far in this cell
  for (std::size_t i = 0; i < record.size();) {
    const char c = record[i];
    if (c == delimiter) {
      cell = &next_cell();
      cell_start = true;
      ++i;
    } else if (c == '"' && cell_start) {  // to its closing quote (or the end, in a header never closed)
      const auto close = std::min(closing_quote(record, i), record.size());
      for (++i; i < close; ++i) {
        *cell += record[i];
        if (record[i] == '"') ++i;  // "" is one quote
      }
      i = close + 1;
      cell_start = false;
    } else if (cell_start && (c == ' ' || c == '\t')) {
      ++i;    // a blank before the cell
    } else {  // a plain stretch to the delimiter; a quote in it is text
      const auto end = std::min(record.find(delimiter, i), record.size());
      cell->append(record.data() + i, end - i);
      cell_start = false;
      i = end;
    }
  }
  return count;
}

}  // namespace

std::string_view trimmed(std::string_view cell) {
  while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t' || cell.back() == '\r')) cell.remove_suffix(1);
  while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
  return cell;
}

const std::vector<std::string_view>& Cells::split(std::string_view record, char delimiter) {
  views_.clear();
  if (record.find('"') == std::string_view::npos) {
    // Cells are a dozen bytes: a plain loop beats a memchr call per cell.
    std::size_t begin = 0;
    for (std::size_t i = 0; i < record.size(); ++i) {
      if (record[i] != delimiter) continue;
      views_.push_back(trimmed(record.substr(begin, i - begin)));
      begin = i + 1;
    }
    views_.push_back(trimmed(record.substr(begin)));
    return views_;
  }
  const auto count = unquote_into(record, delimiter, unquoted_);
  for (std::size_t k = 0; k < count; ++k) views_.push_back(trimmed(unquoted_[k]));
  return views_;
}

std::vector<std::string> split(std::string_view record, char delimiter) {
  Cells cells;
  const auto& views = cells.split(record, delimiter);
  return {views.begin(), views.end()};
}

bool Records::next(std::string_view& record) {
  while (pos_ < text_.size()) {
    line_ = next_line_;
    const auto end = record_end(text_, pos_, delimiter_);
    if (end == std::string_view::npos)
      throw UsageError(path_ + ":" + std::to_string(line_) + ": a quoted cell opened on this line is never closed",
                       "close the quote; a quote inside a quoted cell is written \"\"");
    record = text_.substr(pos_, end - pos_);
    pos_ = std::min(end + 1, text_.size());  // a last record without '\n' ends the text
    next_line_ += lines_of(record);
    // Blank lines are skipped, and so are lines of delimiters alone (";;;"): the rows a spreadsheet
    // exports after its data from cells that were formatted but left empty.
    const char blank[] = {' ', '\t', '\r', delimiter_, '\0'};
    if (record.find_first_not_of(blank) != std::string_view::npos) return true;
  }
  return false;
}

std::string Records::where() const {
  const auto last = next_line_ - 1;
  return path_ + ":" + std::to_string(line_) + (last > line_ ? "-" + std::to_string(last) : "") + ": ";
}

std::vector<Stretch> cut_into_stretches(std::string_view text, char delimiter, std::int64_t first_line, int count) {
  std::vector<Stretch> stretches;
  const auto target = text.size() / static_cast<std::size_t>(std::max(1, count)) + 1;
  std::size_t begin = 0, pos = 0;
  std::int64_t line = first_line, begin_line = first_line;
  while (pos < text.size() && static_cast<int>(stretches.size()) + 1 < count) {
    const auto end = record_end(text, pos, delimiter);
    if (end == std::string_view::npos) break;
    line += lines_of(text.substr(pos, end - pos));
    pos = std::min(end + 1, text.size());
    if (pos - begin >= target) {
      stretches.push_back({text.substr(begin, pos - begin), begin_line});
      begin = pos;
      begin_line = line;
    }
  }
  if (begin < text.size() || stretches.empty()) stretches.push_back({text.substr(begin), begin_line});
  return stretches;
}

int stretches_for(std::size_t bytes) {
  constexpr std::size_t kBytesPerStretch = 4 << 20;  // below, a thread's start costs more than it saves
  return static_cast<int>(std::min(static_cast<std::size_t>(std::max(1, at::get_num_threads())), bytes / kBytesPerStretch + 1));
}

}  // namespace gputrain::data::csv
