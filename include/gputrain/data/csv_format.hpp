#pragma once
// CSV with a header row: chosen feature columns and the label column(s), parsed as numbers.

#include <string>
#include <vector>

#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

struct CsvSpec {
  std::vector<std::string> features;  ///< column names; empty: every column but the labels
  std::vector<std::string> labels;    ///< the label column's name; regression: one or more target columns
  bool classification = true;         ///< labels are class ids (int64), else float32 targets
  char delimiter = ',';
};

/// Inputs float32 [rows, features], targets int64 [rows] or float32 [rows, label columns]. For classification a
/// label column of names (e.g. "setosa") is mapped to ids in sorted order and `class_names`
/// receives them; when `class_names` already holds names (a validation file read after its
/// training file), those ids are used and an unknown name is an error. A bad cell is a UsageError naming the file, the line,
/// the column and the text found. `feature_names`, when given, receives the feature columns' names
/// in the inputs' order (for the run's data line: which columns the model reads).
TensorDataset read_csv(const std::string& path, const CsvSpec& spec, std::vector<std::string>* class_names = nullptr,
                       std::vector<std::string>* feature_names = nullptr);

}  // namespace gputrain::data
