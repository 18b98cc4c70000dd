#pragma once
// data.missing: what a missing feature value becomes once a table is read. With `error` (the
// default) the parse stops at the first and names them all; otherwise it leaves NaN where a value
// is missing, and this drops those rows (`drop`) or fills them with the training table's column
// mean (`mean`) or 0 (`zero`), and says so once.

#include "csv_table.hpp"

namespace gputrain::data::csv {

/// What fill_missing did: the value each column of numbers is filled with (mean, zero; by name,
/// in the features' order) and a note when any value was missing.
struct Filled {
  std::vector<std::pair<std::string, double>> values;
  std::string note;
};

/// Fills or drops the NaNs of `table`'s columns of numbers as `spec.missing` says; a validation
/// table takes the training table's values (`spec.fill_values`). Throws UsageError when a column
/// has no value at all (mean) or no row is left (drop).
Filled fill_missing(Table& table, const CsvSpec& spec);

}  // namespace gputrain::data::csv
