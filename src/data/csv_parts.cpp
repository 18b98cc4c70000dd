#include "csv_parts.hpp"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data {
namespace {

namespace fs = std::filesystem;

bool is_csv_name(const std::string& name) {
  const auto ends = [&](const std::string& end) { return name.size() > end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0; };
  return ends(".csv") || ends(".csv.gz") || ends(".tsv");
}

// The files `pattern` matches, sorted, as the shell would expand it.
std::vector<std::string> matches(const std::string& pattern) {
  glob_t found{};
  std::vector<std::string> files;
  if (::glob(pattern.c_str(), 0, nullptr, &found) == 0)
    for (std::size_t i = 0; i < found.gl_pathc; ++i) files.emplace_back(found.gl_pathv[i]);
  ::globfree(&found);
  return files;
}

[[noreturn]] void refuse(const std::string& what, const std::vector<std::string>& files, const std::string& pattern, const std::string& joined,
                         const std::string& key) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < files.size() && i < 3; ++i) names.push_back(fs::path(files[i]).filename().string());
  if (files.size() > 3) names.push_back("...");
  throw UsageError(what + " " + core::counted(static_cast<std::int64_t>(files.size()), "CSV file") + " (" + core::join(names) +
                       "), and data.source csv reads one file",
                   "set " + key + " to one of them, or, if they are parts of one table, join them with pandas: python3 -c \"import glob, pandas as pd; pd.concat(pd.read_csv(f) for f in sorted(glob.glob('" +
                       pattern + "'))).to_csv('" + joined + "', index=False)\", then set " + key + ": " + joined);
}

}  // namespace

void refuse_csv_parts(const std::string& path, const std::string& key) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file(ec) && is_csv_name(entry.path().filename().string())) files.push_back(entry.path().string());
    if (files.empty()) return;
    std::sort(files.begin(), files.end());
    // Parts share the first one's extension: parts/*.csv, or parts/*.csv.gz
    const auto& first = files.front();
    const std::string extension = first.size() > 7 && first.compare(first.size() - 7, 7, ".csv.gz") == 0 ? ".csv.gz" : fs::path(first).extension().string();
    const auto folder = fs::path(path).lexically_normal();
    const auto name = folder.has_filename() ? folder : folder.parent_path();
    refuse("'" + path + "' is a folder of", files, (name / ("*" + extension)).string(), name.string() + ".csv", key);
  }
  if (path.find_first_of("*?") == std::string::npos || fs::exists(path, ec)) return;
  std::vector<std::string> files;
  for (const auto& file : matches(path))
    if (is_csv_name(fs::path(file).filename().string())) files.push_back(file);
  if (files.empty()) return;
  // Written beside the parts' folder, where the pattern does not match it: parts/*.csv -> parts.csv
  const auto folder = fs::path(files.front()).parent_path().lexically_normal();
  refuse("'" + path + "' is a pattern: it matches", files, path, folder.empty() || folder == "." ? "joined.csv" : folder.string() + ".csv", key);
}

}  // namespace gputrain::data
