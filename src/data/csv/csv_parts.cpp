#include "gputrain/data/csv_parts.hpp"

#include <glob.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "csv_table.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data {
namespace {

namespace fs = std::filesystem;

// The files `pattern` matches, sorted, as the shell would expand it.
std::vector<std::string> matches(const std::string& pattern) {
  glob_t found{};
  std::vector<std::string> files;
  if (::glob(pattern.c_str(), 0, nullptr, &found) == 0)
    for (std::size_t i = 0; i < found.gl_pathc; ++i) files.emplace_back(found.gl_pathv[i]);
  ::globfree(&found);
  return files;
}

}  // namespace

bool is_csv_name(const std::string& file_name) {
  const auto name = core::lower(file_name);
  const auto ends = [&](const std::string& end) {
    return name.size() > end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0;
  };
  return ends(".csv") || ends(".csv.gz") || ends(".tsv") || ends(".tsv.gz");
}

std::vector<std::string> csv_parts(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      // Names starting with '.' or '_' are the tools' (macOS's ._part-0.csv, a writer's _temporary
      // part), as Hadoop, Spark and pyarrow read a folder.
      const auto name = entry.path().filename().string();
      if (name[0] != '.' && name[0] != '_' && entry.is_regular_file(ec) && is_csv_name(name)) files.push_back(entry.path().string());
    }
  } else if (path.find_first_of("*?") != std::string::npos && !fs::exists(path, ec)) {
    for (const auto& file : matches(path))
      if (is_csv_name(fs::path(file).filename().string())) files.push_back(file);
  }
  std::sort(files.begin(), files.end());
  return files;
}

TensorDataset read_csv_parts(const std::vector<std::string>& parts, const CsvSpec& spec, std::vector<std::string>* class_names,
                             CsvColumns* columns, const ReadProgress& progress) {
  const bool known_names = class_names && !class_names->empty();  // a validation table: the training classes' ids
  std::vector<csv::Table> tables;
  std::vector<std::vector<std::string>> names_of(parts.size());
  CsvSpec part_spec = spec;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto* names = known_names ? class_names : &names_of[i];
    tables.push_back(csv::read_table(parts[i], part_spec, names, progress));
    if (i == 0) {  // the others read the first part's features, by name and in its order
      part_spec.features = tables.front().features;
      part_spec.features_origin = "a feature column of " + parts[0];
    }
  }
  if (spec.classification && !known_names) {
    // Each part numbered its own names in sorted order: renumber them in the order of all names.
    const auto named = [](const std::vector<std::string>& names) { return !names.empty(); };
    const auto with_names = std::count_if(names_of.begin(), names_of.end(), named);
    if (with_names > 0 && with_names < static_cast<std::ptrdiff_t>(parts.size())) {
      const auto by_name = static_cast<std::size_t>(std::find_if(names_of.begin(), names_of.end(), named) - names_of.begin());
      const auto by_id = static_cast<std::size_t>(std::find_if_not(names_of.begin(), names_of.end(), named) - names_of.begin());
      throw UsageError("'" + parts[by_name] + "' has class names in its label column, but '" + parts[by_id] + "' has class ids",
                       "use either names or ids in every part");
    }
    if (with_names > 0) {
      std::vector<std::string> all;
      for (const auto& names : names_of) all.insert(all.end(), names.begin(), names.end());
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      for (std::size_t i = 0; i < parts.size(); ++i) {
        std::vector<std::int64_t> ids;
        for (const auto& name : names_of[i]) ids.push_back(std::lower_bound(all.begin(), all.end(), name) - all.begin());
        tables[i].targets = at::tensor(ids, at::kLong).index_select(0, tables[i].targets);
      }
      if (class_names) *class_names = all;
    }
  }
  // Categories are numbered over all parts, as class names are.
  return csv::finish_table(csv::join_tables(std::move(tables), spec), spec, columns);
}

}  // namespace gputrain::data
