#pragma once
// data.missing: what a missing feature value becomes once a table is read. With `error` (the
// default) the parse stops at the first and names them all; otherwise it leaves NaN where a value
// is missing, and this drops those rows (`drop`) or fills them with the training table's column
// mean (`mean`) or 0 (`zero`), and says so once.

#include "csv_table.hpp"

namespace gputrain::data::csv {

/// Fills or drops the NaNs of `table`'s columns of numbers as `spec.missing` says; a validation
/// table takes the training table's values (`spec.fill_values`). `columns`, when given, receives
/// the value each column of numbers is filled with (mean, zero) and a note of what was done.
/// Throws UsageError when a column has no value at all (mean) or no row is left (drop).
void fill_missing(Table& table, const CsvSpec& spec, CsvColumns* columns);

}  // namespace gputrain::data::csv
