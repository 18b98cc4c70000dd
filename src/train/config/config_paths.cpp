#include "config_paths.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <vector>

#include "config_schema.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/similar_path.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/csv_parts.hpp"
#include "gputrain/data/sources.hpp"

namespace gputrain::train {
namespace fs = std::filesystem;

namespace {

// A file, a folder, or a pattern of CSV parts (data.path: parts/*.csv) that matches some.
bool found(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec) || !data::csv_parts(path.string()).empty();
}

}  // namespace

std::string expand_path(const std::string& text, const std::string& key, const std::string& where) {
  const auto variable = [&](const std::string& name) -> std::string {
    if (const char* value = std::getenv(name.c_str())) return value;
    throw UsageError(where + ": " + key + " '" + text + "' names $" + name + ", which is not set in this environment",
                     "set it (export " + name + "=...) before running gputrain, or write the path out");
  };
  std::string out;
  std::size_t i = 0;
  if (text == "~" || text.rfind("~/", 0) == 0) {
    out = variable("HOME");
    i = 1;
  }
  // A variable's name as a shell reads it: letters, digits and '_', not starting with a digit.
  const auto name_char = [](char c, bool first) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalpha(u) || c == '_' || (!first && std::isdigit(u));
  };
  while (i < text.size()) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      const auto close = text.find('}', i + 2);
      const auto name = close == std::string::npos ? "" : text.substr(i + 2, close - i - 2);
      if (!name.empty() && name_char(name[0], true) && std::all_of(name.begin(), name.end(), [&](char c) { return name_char(c, false); })) {
        out += variable(name);
        i = close + 1;
        continue;
      }
      // ${oc.env:HOME}, ${train.lr}: kept as written it would name a folder "${oc.env:HOME}".
      throw UsageError(where + ": " + key + " '" + text + "' holds '" +
                           text.substr(i, close == std::string::npos ? std::string::npos : close - i + 1) +
                           "', an interpolation of OmegaConf's or Hydra's, which gputrain does not resolve",
                       "write the path itself, or an environment variable as the shell writes it: $HOME or ${HOME}");
    } else if (text[i] == '$' && i + 1 < text.size() && name_char(text[i + 1], true)) {
      auto end = i + 1;
      while (end < text.size() && name_char(text[end], false)) ++end;
      out += variable(text.substr(i + 1, end - i - 1));
      i = end;
      continue;
    }
    out += text[i++];
  }
  return out;
}

bool is_input_path_key(const std::string& key) {
  // data.labels and data.val_labels are files for the array sources (and column names for a CSV,
  // which no file next to the config is named like).
  static const std::set<std::string> keys = {"data.path",       "data.val_path",     "data.labels",
                                             "data.val_labels", "model.torchscript", "model.init_weights"};
  return keys.count(key) > 0;
}

void check_path_beside_config(const Config& config, const std::string& key, const KeyOrigin& origin) {
  const Field* field = find_field(key);
  const fs::path config_folder = fs::path(origin.file).parent_path();
  if (!field || config_folder.empty()) return;  // a config in the current folder: its paths resolve alike
  const YAML::Node value = field->show(config);
  std::vector<std::string> paths;
  if (value.IsScalar()) paths.push_back(value.Scalar());
  if (value.IsSequence())
    for (const auto& item : value) paths.push_back(item.Scalar());
  for (const auto& text : paths) {
    const fs::path path(text);
    if (text.empty() || path.is_absolute() || found(path)) continue;
    const fs::path beside = (config_folder / path).lexically_normal();
    if (!found(beside)) continue;
    std::error_code ec;
    const auto here = fs::current_path(ec);
    throw UsageError(origin.where + ": " + key + " '" + text + "' is not in the current folder" + (ec ? "" : " (" + here.string() + ")") +
                         ", but is next to the config file: " + beside.string(),
                     "paths in a config are taken from the folder gputrain runs in: write " + key + ": " + beside.string() +
                         " (or an absolute path), or run gputrain from " + config_folder.string());
  }
}

void tell_data_source(Config& config, const std::string& path_origin) {
  const std::string& path = config.data.path;
  if (path.empty()) return;  // set back to none (`--set data.path=`): synthetic, as by default
  const std::string told = data::source_for_path(path);
  if (!told.empty()) {
    config.data.source = told;
    return;
  }
  if (!found(path))
    throw UsageError(path_origin + ": data.path '" + path + "' does not exist" + core::did_you_mean(path),
                     "check the path (relative paths start from the folder gputrain runs in)");
  if (const auto other = data::format_not_read(path); !other.what.empty())
    throw UsageError(path_origin + ": data.path '" + path + "' is " + other.what + ", which gputrain does not read", other.fix);
  if (const auto text = data::delimited_text(path); !text.empty())
    throw UsageError(
        path_origin + ": cannot tell the format of '" + path + "' from its name, and data.source is not set: it reads as " + text,
        "set data.source: csv, which reads such text (tab-, semicolon- or comma-separated, a header row first)");
  throw UsageError(path_origin + ": cannot tell the format of '" + path + "' from its name or contents, and data.source is not set",
                   "set data.source to its format (" + core::join(data::file_source_names()) + ")");
}

}  // namespace gputrain::train
