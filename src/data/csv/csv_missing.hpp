#pragma once
// Missing values in a CSV file: the parse throws MissingValue at the first, and read_csv then
// counts them all, by column, for one error with the pandas line that drops those rows: fixing
// them one error at a time is a run per row.

#include <cstdint>
#include <string>
#include <string_view>

#include "csv_row_format.hpp"
#include "gputrain/core/error.hpp"

namespace gputrain::data::csv {

/// The first missing value, where the parse met it; its remedy is left to throw_missing_values.
class MissingValue : public UsageError {
 public:
  using UsageError::UsageError;
};

/// "is empty: a missing value" or ": 'NA' marks a missing value", after a cell's name.
std::string missing_text(std::string_view cell);

/// Counts the missing values of `rows` (the file's rows, the first on line `first_line`) on the
/// parse's threads, and throws `first`'s message with how many rows miss one and in which
/// columns, and the fix: the pandas line that drops those rows (limited to the columns read), or
/// the setting that leaves the columns out.
[[noreturn]] void throw_missing_values(const MissingValue& first, std::string_view rows, std::int64_t first_line, const RowFormat& format);

}  // namespace gputrain::data::csv
