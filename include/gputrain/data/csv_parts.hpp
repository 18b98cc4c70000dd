#pragma once
// A CSV table written as several files (Spark, Dask and chunked pandas exports leave a folder of
// part-*.csv): data.path may name the folder or a pattern matching the parts, and they are read
// as one table, in sorted order. config_paths (train) asks it whether a pattern matches anything.

#include <string>
#include <vector>

#include "gputrain/data/csv_format.hpp"

namespace gputrain::data {

/// Whether a file name is one the CSV reader takes: .csv, .tsv or .csv.gz, in any case.
bool is_csv_name(const std::string& file_name);

/// The part files `path` stands for, sorted: the .csv, .csv.gz and .tsv files of a folder (not its
/// sub-folders), or those a wildcard pattern ('*', '?') matches. Empty when `path` is a file (or
/// nothing), which read_csv then reads or names.
std::vector<std::string> csv_parts(const std::string& path);

/// Reads `parts` as one table: every part with the first part's feature columns, found by name;
/// class names mapped to ids in the sorted order of all parts' names (when `class_names` already
/// holds names, those ids, as read_csv does). A bad cell names its part, line and column; a part
/// with class names where another has class ids is a UsageError.
TensorDataset read_csv_parts(const std::vector<std::string>& parts, const CsvSpec& spec, std::vector<std::string>* class_names,
                             CsvColumns* columns, const ReadProgress& progress);

}  // namespace gputrain::data
