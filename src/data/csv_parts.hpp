#pragma once
// A CSV dataset written as several files (Spark, Dask and pandas' chunked writes leave a folder of
// part-*.csv): data.source csv reads one file, so a folder or a wildcard pattern given as its path
// is named for what it is, with the pandas line that joins the parts.

#include <string>

namespace gputrain::data {

/// Throws UsageError when `path` (the value of `key`) is a folder holding .csv, .csv.gz or .tsv
/// files, or a wildcard pattern ('*', '?') that matches such files; returns otherwise.
void refuse_csv_parts(const std::string& path, const std::string& key);

}  // namespace gputrain::data
