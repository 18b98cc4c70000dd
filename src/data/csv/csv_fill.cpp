#include "csv_fill.hpp"

#include <ATen/ATen.h>

#include <cmath>

#include "csv_row_format.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data::csv {
namespace {

// What the columns of numbers miss: per column, and the rows that miss any.
struct Gaps {
  std::vector<std::int64_t> missing, present;
  std::vector<double> sums;
  std::vector<std::uint8_t> row_misses;  // per row of the table, in order
  std::int64_t rows_missing = 0;
};

Gaps gaps_of(const Table& table, std::size_t width) {
  Gaps g{std::vector<std::int64_t>(width), std::vector<std::int64_t>(width), std::vector<double>(width), {}, 0};
  g.row_misses.reserve(static_cast<std::size_t>(table.rows));
  for (const auto& chunk : table.chunks)
    for (std::int64_t r = 0; r < chunk.rows; ++r) {
      const float* row = chunk.numbers.data() + static_cast<std::size_t>(r) * width;
      bool misses = false;
      for (std::size_t f = 0; f < width; ++f) {
        if (std::isnan(row[f])) {
          ++g.missing[f];
          misses = true;
        } else {
          ++g.present[f];
          g.sums[f] += row[f];
        }
      }
      g.row_misses.push_back(misses);
      g.rows_missing += misses;
    }
  return g;
}

// "'b' 8, 'c' 4": the columns that miss values and how many.
std::string per_column(const std::vector<std::string>& names, const std::vector<std::int64_t>& missing) {
  std::vector<std::string> counts;
  for (std::size_t f = 0; f < names.size(); ++f)
    if (missing[f] > 0) counts.push_back("'" + names[f] + "' " + std::to_string(missing[f]));
  return core::join_first(counts, kNamedColumns);  // a file of 20,000 such columns made a 300 KB note
}

// Keeps the rows that miss nothing: one chunk of them, their categories and their targets.
void drop_rows(Table& table, const Gaps& gaps, std::size_t width) {
  Chunk kept;
  std::vector<std::int64_t> rows;
  std::int64_t i = 0;
  for (const auto& chunk : table.chunks)
    for (std::int64_t r = 0; r < chunk.rows; ++r, ++i) {
      if (gaps.row_misses[static_cast<std::size_t>(i)]) continue;
      const auto* row = chunk.numbers.data() + static_cast<std::size_t>(r) * width;
      kept.numbers.insert(kept.numbers.end(), row, row + width);
      rows.push_back(i);
    }
  kept.rows = static_cast<std::int64_t>(rows.size());
  for (auto& column : table.categories) {  // each row's category goes with it
    std::vector<std::int32_t> codes;
    codes.reserve(rows.size());
    for (const auto row : rows) codes.push_back(column.codes[static_cast<std::size_t>(row)]);
    column.codes = std::move(codes);
  }
  table.chunks.clear();
  table.chunks.push_back(std::move(kept));
  table.targets = table.targets.index_select(0, at::tensor(rows, at::kLong));
  table.rows = static_cast<std::int64_t>(rows.size());
}

}  // namespace

Filled fill_missing(Table& table, const CsvSpec& spec) {
  Filled filled;
  if (spec.missing.empty() || spec.missing == "error") return filled;
  std::vector<std::string> names;  // the columns of numbers, in the chunks' order
  for (std::size_t f = 0; f < table.features.size(); ++f)
    if (table.category_of[f] < 0) names.push_back(table.features[f]);
  const auto width = names.size();
  if (width == 0) return filled;
  const auto gaps = gaps_of(table, width);
  const auto where = "'" + table.path + "'";
  const auto counts = per_column(names, gaps.missing);
  if (spec.missing == "drop") {
    if (gaps.rows_missing == table.rows && table.rows > 0)
      throw UsageError("data.missing: drop leaves no row of " + where + ": every one misses a value (" + counts + ")",
                       "leave the emptiest columns out (data.exclude), or set data.missing: mean");
    if (gaps.rows_missing > 0) {
      drop_rows(table, gaps, width);
      filled.note = "note: data.missing: drop: " + std::to_string(gaps.rows_missing) + " of " +
                    std::to_string(gaps.rows_missing + table.rows) + " rows of " + where + " miss a value (" + counts +
                    ") and are left out";
    }
    return filled;
  }
  std::vector<double> fill(width, 0.0);  // zero
  if (!spec.fill_values.empty()) {
    fill = spec.fill_values;  // a validation table: the training table's
  } else if (spec.missing == "mean") {
    for (std::size_t f = 0; f < width; ++f) {
      if (gaps.present[f] == 0)
        throw UsageError("data.missing: mean: column '" + names[f] + "' of " + where + " has no value to take the mean of",
                         "leave it out (data.exclude: [" + names[f] + "])");
      fill[f] = gaps.sums[f] / static_cast<double>(gaps.present[f]);
    }
  }
  for (auto& chunk : table.chunks)
    for (std::size_t k = 0; k < chunk.numbers.size(); ++k)
      if (std::isnan(chunk.numbers[k])) chunk.numbers[k] = static_cast<float>(fill[k % width]);
  for (std::size_t f = 0; f < width; ++f) filled.values.emplace_back(names[f], fill[f]);
  if (gaps.rows_missing > 0)
    filled.note = "note: data.missing: " + spec.missing + ": " + std::to_string(gaps.rows_missing) + " of " + std::to_string(table.rows) +
                  " rows of " + where + " miss a value (" + counts + "), filled with " +
                  (spec.missing == "zero"     ? "0"
                   : spec.fill_values.empty() ? "the column's mean"
                                              : "the training data's column mean");
  return filled;
}

}  // namespace gputrain::data::csv
