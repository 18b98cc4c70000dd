#pragma once
// A CSV file read as numbers and numbered categories, before its columns of categories are spread
// into one-hot input columns: read_csv finishes one file's table at once; read_csv_parts joins its
// parts' tables first, so that the categories are those of the whole table.

#include <string>
#include <vector>

#include "csv_categories.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data::csv {

/// Rows of the feature columns of numbers, one after another, as a stretch's parse left them.
struct Chunk {
  std::vector<float> numbers;
  std::int64_t rows = 0;
};

struct Table {
  std::string path;           // the file (a table in parts: its first part), for errors
  std::vector<Chunk> chunks;  // the rows, in order: copied once, into the inputs, by finish_table
  std::int64_t rows = 0;
  at::Tensor targets;
  std::vector<std::string> features;  // every feature column, in the model's order
  std::vector<int> category_of;       // per feature: its column's place in `categories`; -1 for a column of numbers
  std::vector<Coded> categories;      // data.categorical's columns, in the features' order
  std::vector<std::size_t> unnamed;   // 1-based positions of header cells with no name
  std::vector<std::string> not_utf8;  // "'a.csv' (line 1: byte 0xE9, read as 'é')" per file read as Windows-1252
};

/// One file's table (read_csv's work but the one-hot columns).
Table read_table(const std::string& path, const CsvSpec& spec, std::vector<std::string>* class_names, const ReadProgress& progress);

/// A table's parts as one: their rows in order, each column's categories merged (among
/// `spec.categories` when they are given). The parts share the first part's features.
Table join_tables(std::vector<Table> parts, const CsvSpec& spec);

/// The dataset the model reads: each column of categories spread into one input column per
/// category, in its place among the features. Found categories (spec.categories empty) are
/// checked to be categories: a column with a new value in most rows (names, ids, free text), more
/// than kMostCategories, or no value at all is a UsageError with the settings that leave it out.
/// `columns`, when given, receives the features, the inputs' names and the categories. The chunks
/// are copied side by side, each freed once copied: the peak stays near one copy of the data.
TensorDataset finish_table(Table table, const CsvSpec& spec, CsvColumns* columns);

}  // namespace gputrain::data::csv
