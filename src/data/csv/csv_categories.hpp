#pragma once
// The cells of a CSV column of categories (data.categorical), numbered: each stretch of rows
// numbers the categories it meets on its own thread; the stretches' numbers, and a table's parts',
// are then merged into the file's sorted categories (or a validation file's training categories).

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gputrain::data::csv {

/// A column's categories and each row's place among them.
struct Coded {
  std::vector<std::string> values;
  std::vector<std::int32_t> codes;  // per row: its category's index in `values`; -1 for none
  std::int64_t unseen_rows = 0;     // rows whose category is not among known ones (merge with `known`)
  std::string unseen_example;
};

/// Numbers a column's cells in the order their categories are first met; a missing value (an
/// empty cell, "NA", ...: csv::is_missing) is none.
class CategoryCodes {
 public:
  void add(std::string_view cell);
  Coded take();

 private:
  std::unordered_map<std::string, std::int32_t> index_;
  std::string key_;
  Coded coded_;
};

/// `pieces` (a file's stretches, or a table's parts, in order) as one column: the rows in order,
/// numbered among `known` (a validation file's: the training file's categories; a category not
/// among them counted as unseen and read as none) or, when `known` is null, among all pieces'
/// categories sorted: as numbers when every one is a number ("2" before "10"), else as text.
Coded merge_categories(std::vector<Coded> pieces, const std::vector<std::string>* known);

/// Whether `values` different values in `rows` rows (those with a value) read as categories: a few,
/// or values repeated across rows, rather than names, ids and free text, which hold a new value in
/// most rows and would be as many input columns.
bool reads_as_categories(std::size_t values, std::int64_t rows);

/// The most categories one column may have: each is an input column.
constexpr std::size_t kMostCategories = 1000;

}  // namespace gputrain::data::csv
