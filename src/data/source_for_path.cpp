// Telling a data file's format from its name, so that a path given without data.source is either
// read as what it is (gputrain profile --path) or named in the error's fix (train).
#include <filesystem>

#include "gputrain/core/units.hpp"
#include "gputrain/data/csv_parts.hpp"
#include "gputrain/data/sources.hpp"

namespace gputrain::data {
namespace fs = std::filesystem;

namespace {

std::string source_for_folder(const fs::path& folder) {
  std::error_code ec;
  bool has_subfolder = false;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "data_batch_1.bin") return "cifar10";
    if (name.rfind("train-images-idx3-ubyte", 0) == 0) return "mnist";
    has_subfolder = has_subfolder || entry.is_directory(ec);
  }
  return has_subfolder ? "image_folder" : "";
}

}  // namespace

std::string source_for_path(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return "";
  // A folder of part-*.csv, or a pattern matching them, is a CSV table in parts.
  const auto csv_table = [&] { return csv_parts(path).empty() ? "" : "csv"; };
  if (fs::is_directory(path, ec)) {
    const auto source = source_for_folder(path);
    return source.empty() ? csv_table() : source;
  }
  // A pattern names CSV parts, the only files read by pattern; a missing file is still told by its
  // name, so that its reader says it is missing.
  if (!fs::exists(path, ec) && path.find_first_of("*?[") != std::string::npos) return csv_table();
  const std::string extension = core::lower(fs::path(path).extension().string());
  if (extension == ".npy") return "npy";
  if (extension == ".npz") return "npz";
  if (extension == ".safetensors") return "safetensors";
  // The CSV reader inflates a gzip'd file (data.csv.gz, as pandas writes it).
  return is_csv_name(fs::path(path).filename().string()) ? "csv" : "";
}

}  // namespace gputrain::data
