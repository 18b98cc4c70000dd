// Telling a data file's format from its name, so that a path given without data.source is either
// read as what it is (gputrain profile --path) or named in the error's fix (train).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "gputrain/core/units.hpp"
#include "gputrain/data/csv_parts.hpp"
#include "gputrain/data/sources.hpp"
#include "path_text.hpp"

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

FormatNotRead format_not_read(const std::string& path) {
  const auto pandas = [](const std::string& read_call) { return pandas_to_csv_fix(read_call); };
  const std::string name = core::lower(fs::path(path).filename().string());
  const auto ends = [&](const char* suffix) {
    const auto n = std::strlen(suffix);
    return name.size() > n && name.compare(name.size() - n, n, suffix) == 0;
  };
  if (ends(".parquet") || ends(".pq")) return {"a Parquet file", pandas("read_parquet('" + path + "')")};
  if (ends(".feather") || ends(".arrow")) return {"an Arrow/Feather file", pandas("read_feather('" + path + "')")};
  if (ends(".jsonl") || ends(".ndjson")) return {"JSON lines", pandas("read_json('" + path + "', lines=True)")};
  if (ends(".json")) return {"JSON", pandas("read_json('" + path + "')")};
  if (ends(".xlsx") || ends(".xls"))
    return {"an Excel workbook", "save the sheet as \"CSV UTF-8\", or " + pandas("read_excel('" + path + "')")};
  if (ends(".h5") || ends(".hdf5"))
    return {"an HDF5 file", "save its arrays as .npz: python -c \"import h5py, numpy as n; f = h5py.File('" + path +
                                "'); n.savez('data.npz', **{k: f[k][:] for k in f})\", then data.path: data.npz"};
  if (ends(".pt") || ends(".pth"))
    return {"a torch.save file (a pickle)",
            "save its tensors as safetensors: from safetensors.torch import save_file; "
            "save_file({'x': x, 'y': y}, 'data.safetensors'), then data.path: data.safetensors"};
  if (ends(".pkl") || ends(".pickle"))
    return {"a pickle (which runs code when read)",
            "save its arrays with numpy: numpy.savez('data.npz', x=x, y=y), then data.path: data.npz"};
  if (ends(".tfrecord") || ends(".tfrecords"))
    return {"a TFRecord file", "write its features as .npz or safetensors (tf.data to numpy), or its images as a folder per class"};
  if (ends(".zip")) return {"a zip archive", "unpack it (unzip " + path + ") and point data.path at what it holds"};
  if (ends(".tar") || ends(".tar.gz") || ends(".tgz") || ends(".tar.xz") || ends(".tar.bz2") || ends(".tbz2") || ends(".tar.zst"))
    return {"a tar archive", "unpack it (tar -xf " + path + ") and point data.path at what it holds"};
  // gzip is read as it is (a .csv.gz); the others the CSV reader names by their bytes once data.source is set.
  const auto decompress = [&](const std::string& command) {
    return "decompress it (" + command + " " + path + ") and set data.path: " + path.substr(0, path.rfind('.')) +
           "; gzip-compressed files (.csv.gz) are read as they are";
  };
  if (ends(".bz2")) return {"bzip2-compressed", decompress("bunzip2 -k")};
  if (ends(".xz")) return {"xz-compressed", decompress("xz -dk")};
  if (ends(".zst")) return {"zstd-compressed", decompress("zstd -d")};
  if (ends(".7z") || ends(".rar"))
    return {"a " + std::string(ends(".7z") ? "7-Zip" : "RAR") + " archive", "unpack it and point data.path at what it holds"};
  return {};
}

std::string delimited_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.empty() || head.find('\0') != std::string::npos) return "";
  std::vector<std::string> lines;
  std::istringstream text(head);
  for (std::string line; lines.size() < 3 && std::getline(text, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  // YAML ("data: {path: x, labels: y}") or a comment is no header row, whatever its commas.
  if (lines.size() < 2 || lines[0].find(": ") != std::string::npos || lines[0].find('{') != std::string::npos || lines[0][0] == '#')
    return "";
  for (const auto& [delimiter, name] : {std::pair{'\t', "tab"}, std::pair{';', "semicolon"}, std::pair{',', "comma"}}) {
    const auto fields = std::count(lines[0].begin(), lines[0].end(), delimiter);
    const bool same = std::all_of(lines.begin() + 1, lines.end(),
                                  [&](const std::string& line) { return std::count(line.begin(), line.end(), delimiter) == fields; });
    if (fields == 0 || !same) continue;
    std::string columns;
    for (const char c : lines[0].substr(0, 80)) columns += c == delimiter ? std::string(", ") : std::string(1, c);
    return std::string(name) + "-separated text, its first row " + columns + (lines[0].size() > 80 ? "..." : "");
  }
  return "";
}

}  // namespace gputrain::data
