#include "path_text.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <vector>

#include "gputrain/core/similar_path.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/core/write_error.hpp"

namespace gputrain::data {

std::string unusable_path_text(const std::string& path, const std::string& otherwise) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) || path.empty()) return otherwise;
  if (const auto too_long = core::overlong_path(path)) return "'" + path + "' cannot be opened: " + *too_long;
  std::string text = "'" + path + "' does not exist";
  if (fs::path(path).is_relative()) {
    const auto here = fs::current_path(ec);
    if (!ec) text += " (relative to the current folder " + here.string() + ", not to the config file)";
  }
  if (const auto similar = core::similar_path(path))
    text += "; did you mean '" + *similar + "'?";
  else
    text += core::foreign_path_note(path);
  return text;
}

UsageError not_a_folder(const std::string& path, const std::string& fix) {
  namespace fs = std::filesystem;
  const auto ends_with = [&](const std::string& suffix) {
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  std::string unpack;
  if (ends_with(".zip")) unpack = "unzip " + path;
  for (const char* suffix : {".tar", ".tar.gz", ".tgz", ".tar.xz"})
    if (ends_with(suffix)) unpack = "tar xf " + path;
  std::error_code ec;
  if (!unpack.empty() && fs::is_regular_file(path, ec))
    return UsageError("'" + path + "' is not a folder but an archive",
                      "unpack it (" + unpack + "), then point data.path at the folder it makes");
  return UsageError(unusable_path_text(path, "'" + path + "' is not a folder"), fix);
}

std::string npy_labels_fix(const std::string& key, const std::string& features) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(features).parent_path();
  const std::string name = fs::path(features).filename().string();
  std::vector<std::string> others;
  std::error_code ec;
  constexpr int kLooked = 1000;  // a folder of many thousand arrays is no pair of files
  int looked = 0;
  for (fs::directory_iterator it(folder.empty() ? fs::path(".") : folder, ec), end; !ec && it != end && looked < kLooked;
       it.increment(ec), ++looked) {
    const std::string other = it->path().filename().string();
    if (other != name && core::lower(it->path().extension().string()) == ".npy") others.push_back(other);
  }
  std::sort(others.begin(), others.end());
  const auto beside = [&](const std::string& labels) {
    return "set " + key + ": " + (folder / labels).string() + " (beside " + name + ")";
  };
  const auto has = [&](const std::string& file) { return std::find(others.begin(), others.end(), file) != others.end(); };
  // The twin by name: X_train.npy / y_train.npy, features.npy / labels.npy, inputs.npy / targets.npy.
  const std::vector<std::pair<std::string, std::string>> twins{
      {"x", "y"}, {"X", "y"}, {"features", "labels"}, {"inputs", "targets"}, {"data", "labels"}};
  for (const auto& [from, to] : twins)
    if (name.rfind(from, 0) == 0 && has(to + name.substr(from.size()))) return beside(to + name.substr(from.size()));
  for (const char* usual : {"y.npy", "labels.npy", "label.npy", "targets.npy", "target.npy"})
    if (has(usual)) return beside(usual);
  if (!others.empty() && others.size() <= 5)
    return "set " + key + " to the labels' .npy file; beside " + name + " there are " + core::join(others);
  return "set " + key + ": path/to/labels.npy";
}

std::string pandas_to_csv_fix(const std::string& read_call, const std::string& read_path) {
  const std::string out = std::filesystem::path(read_path).filename() == "data.csv" ? "table.csv" : "data.csv";
  return "write it as CSV: python -c \"import pandas as p; p." + read_call + ".to_csv('" + out +
         "', index=False)\", then data.path: " + out;
}

}  // namespace gputrain::data
