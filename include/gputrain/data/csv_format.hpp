#pragma once
// CSV with a header row: chosen feature columns and the label column(s), parsed as numbers.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

/// A column of categories (data.categorical) and its categories, in the order of the input columns
/// they become: one each, 1 in the row's own and 0 in the others ("Sex=female", "Sex=male").
struct CsvCategories {
  std::string column;
  std::vector<std::string> values;  ///< sorted: as numbers when every one is a number, else as text
  std::int64_t unseen_rows = 0;     ///< a validation file: rows with a category the training file lacks (read as none)
  std::string unseen_example;       ///< the first such category met
};

struct CsvSpec {
  std::vector<std::string> features;  ///< column names; empty: every named column but the labels and `exclude`
  std::vector<std::string> labels;    ///< the label column's name; regression: one or more target columns
  bool classification = true;         ///< labels are class ids (int64), else float32 targets
  char delimiter = ',';
  std::string features_origin = "data.features";  ///< where `features` came from, for a missing column's error
  std::vector<std::string> exclude{};             ///< columns left out of the default features (an id, a date)
  std::vector<std::string> categorical{};         ///< feature columns of categories, read as one-hot columns in their place
  std::vector<CsvCategories> categories{};        ///< a validation file: the training file's categories; empty: found in the file
  std::string missing = "error";                  ///< data.missing: a missing feature value is an error, or its row is dropped,
                                                  ///< or it is filled with the column's mean or 0 (csv_fill.hpp)
  std::vector<double> fill_values{};              ///< a validation file: the training file's fill value per column of numbers
};

/// The columns read_csv chose, for the run's data line: which columns the model reads.
struct CsvColumns {
  std::vector<std::string> features;      ///< the feature columns' names, in the model's order
  std::vector<std::string> inputs;        ///< the inputs' names: the features, a column of categories as its one-hot
                                          ///< columns ("Sex=female", "Sex=male")
  std::vector<CsvCategories> categories;  ///< the columns of categories, in the features' order
  std::vector<std::size_t> unnamed;       ///< 1-based positions of header cells with no name (pandas' index,
                                          ///< a trailing delimiter), left out of the default features
  std::vector<std::string> notes;         ///< what a run says of the files (text read as Windows-1252)
  /// data.missing mean or zero: what each feature column of numbers is filled with where a value
  /// is missing, in the features' order.
  std::vector<std::pair<std::string, double>> fill_values;
};

/// How far a long read is: the file, the bytes parsed and its size. Called on the reading thread
/// once before parsing starts and about ten times a second while parsing threads work; an
/// exception thrown from it (a stop signal) stops them and is rethrown once they have ended.
using ReadProgress = std::function<void(const std::string& path, std::uint64_t done, std::uint64_t total)>;

/// Inputs float32 [rows, features], targets int64 [rows] or float32 [rows, label columns]. For classification a
/// label column of names (e.g. "setosa") is mapped to ids in sorted order and `class_names`
/// receives them; when `class_names` already holds names (a validation file read after its
/// training file), those ids are used and an unknown name is an error. The columns of
/// `spec.categorical` become one input column per category; a missing value is none of them, as
/// is (in a validation file) a category the training file lacks. A bad cell is a UsageError naming the file, the line,
/// the column and the text found. `columns`, when given, receives the columns chosen.
TensorDataset read_csv(const std::string& path, const CsvSpec& spec, std::vector<std::string>* class_names = nullptr,
                       CsvColumns* columns = nullptr, const ReadProgress& progress = {});

}  // namespace gputrain::data
