#pragma once
// CSV's records and cells, read as Python's csv and pandas read them: a record is a line, or
// several while a quoted cell is open; a cell that starts with a double quote may hold the
// delimiter, line breaks and "" for a quote; a quote later in a cell is text (12" pipe).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gputrain::data::csv {

/// A cell without the blanks around it (nor a line's CR at its end).
std::string_view trimmed(std::string_view cell);

/// The cells of one record at a time, blanks around each left out. A record without quotes (the
/// usual one) is cut into views of its own text, copying nothing; one with quotes is unescaped
/// into storage kept from record to record (a file of millions of cells would otherwise
/// allocate each).
class Cells {
 public:
  /// The cells of `record`, valid until the next call.
  const std::vector<std::string_view>& split(std::string_view record, char delimiter);

 private:
  std::vector<std::string_view> views_;
  std::vector<std::string> unquoted_;
};

/// One record's cells as strings: for the header and other one-off uses.
std::vector<std::string> split(std::string_view record, char delimiter);

/// The records of `text` one by one, blank lines skipped, with the lines each spans for errors.
class Records {
 public:
  Records(std::string_view text, std::string path, char delimiter, std::int64_t first_line = 1)
      : text_(text), path_(std::move(path)), delimiter_(delimiter), next_line_(first_line) {}

  /// The next record that is not blank; false at the end. A quote never closed is a UsageError
  /// naming the line that opened it.
  bool next(std::string_view& record);
  /// "path:7: " for the record last read, "path:7-9: " when its quoted cell spans lines.
  std::string where() const;
  void set_delimiter(char delimiter) { delimiter_ = delimiter; }
  /// Where the next record starts, and its line.
  std::size_t offset() const { return pos_; }
  std::int64_t next_line() const { return next_line_; }

 private:
  std::string_view text_;
  std::string path_;
  char delimiter_;
  std::size_t pos_ = 0;
  std::int64_t line_ = 0;  // the first line of the record last read
  std::int64_t next_line_;
};

/// A stretch of whole records and the line it starts on.
struct Stretch {
  std::string_view text;
  std::int64_t first_line = 1;
};

/// How many stretches `bytes` of rows are parsed in: one per thread LibTorch computes with
/// (at::get_num_threads: OMP_NUM_THREADS, else the cores), each at least 4 MiB.
int stretches_for(std::size_t bytes);

/// Cuts `text`, whose first line is `first_line`, into at most `count` stretches of whole records
/// of about equal size, so that each can be parsed on its own thread. A quote never closed ends
/// the cutting: the rest is one stretch, whose parse reports it.
std::vector<Stretch> cut_into_stretches(std::string_view text, char delimiter, std::int64_t first_line, int count);

}  // namespace gputrain::data::csv
