#pragma once
// The rows of a CSV file's text parsed into feature numbers, labels and category codes, stretch by
// stretch on several threads; each bad cell is an error naming its line, column and fix.
// csv_format.cpp reads the header, decides the row format and assembles the table from the parts.

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "csv_categories.hpp"
#include "csv_row_format.hpp"
#include "gputrain/data/csv_format.hpp"

namespace gputrain::data::csv {

/// The rows of one stretch of the file; stretches are parsed side by side and joined in file order.
struct ParsedRows {
  std::vector<float> features;
  std::vector<double> labels;             // class ids, or regression targets (one per label column)
  std::vector<std::string> label_names;   // classes by name
  std::vector<CategoryCodes> categories;  // per column of categories
  std::int64_t rows = 0;
  std::exception_ptr error;  // the stretch's first bad row
};

/// The rows of `text` (whose first line is `first_line`), read as `format` says, one stretch of
/// whole records per thread; `progress` is told the bytes parsed, and a throw from it stops the
/// parse. The first bad row in the file is the one thrown.
std::vector<ParsedRows> parse_in_stretches(std::string_view text, std::int64_t first_line, const RowFormat& format,
                                           const ReadProgress& progress);

}  // namespace gputrain::data::csv
