// Loading, merging and validating train::Config. The schema (config_schema.cpp) is the one list
// of keys; this file walks YAML documents against it and reports mistakes where they are.
#include "gputrain/train/config.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "config_consistency.hpp"
#include "config_paths.hpp"
#include "config_schema.hpp"
#include "gputrain/core/directory_lock.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/similar_path.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/sources.hpp"
#include "key_suggestions.hpp"
#include "mlflow_settings.hpp"
#include "pasted_characters.hpp"
#include "yaml_hints.hpp"
#include "yaml_tags.hpp"

namespace gputrain::train {

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::fp16_mixed:
      return "fp16-mixed";
    case Precision::bf16_mixed:
      return "bf16-mixed";
    case Precision::fp32:
      break;
  }
  return "fp32";
}

std::string Config::checkpoint_dir() const {
  return checkpoint.dir.empty() ? (std::filesystem::path(logging.dir) / "checkpoints").string() : checkpoint.dir;
}

std::string Config::trace_dir() const {
  return train.profile_dir.empty() ? (std::filesystem::path(logging.dir) / "traces").string() : train.profile_dir;
}

std::string Config::model_label() const { return model.torchscript.empty() ? model.name : model.torchscript; }

bool Config::uses_channels_last() const {
  if (train.channels_last) return *train.channels_last;
  static const std::set<std::string> convolutional = {"small_cnn", "resnet18", "resnet34", "resnet50"};
  return model.torchscript.empty() && convolutional.count(model.name) > 0;
}

namespace {

// Every mistake in the config at once: someone fixing a file should not meet them one run at a
// time. One problem is reported as it is; several as a list, each with its fix, up to kListed (a
// file of 20,000 unknown keys wrote 9 MB of them).
class Problems {
 public:
  template <typename Step>
  void check(Step&& step) {
    try {
      step();
    } catch (const UsageError& e) {
      found_.push_back(e);
    }
  }

  void throw_if_any() const {
    if (found_.empty()) return;
    if (found_.size() == 1) throw found_.front();
    std::string list = std::to_string(found_.size()) + " problems in the config:";
    for (std::size_t i = 0; i < found_.size() && i < kListed; ++i)
      list += "\n  " + std::string(found_[i].what()) + "\n    fix: " + found_[i].remedy();
    const bool more = found_.size() > kListed;
    if (more) list += "\n  ... and " + std::to_string(found_.size() - kListed) + " more";
    const std::string all = found_.size() == 2 ? "both"
                                               : "all " + std::to_string(found_.size()) +
                                                     (more ? " (the first " + std::to_string(kListed) + " are above)" : "");
    throw UsageError(list, "fix " + all + ", then run again (every key: docs/configuration.md)");
  }

 private:
  static constexpr std::size_t kListed = 20;
  std::vector<UsageError> found_;
};

// A section with a `name` key takes a plain value as that name: "device: cuda", "optimizer: sgd".
const Field* shorthand_field(const std::string& section) { return find_field(section + ".name"); }

// Where each key was given last ("file:line:column", "--set k=v", "--path x") and from which
// config file, so that a key left unset can take a value told from another (data.source from
// data.path) and an error about that names the line that set the other; kept as Config::origins.
using GivenKeys = std::map<std::string, KeyOrigin>;

// YAML 1.1's merge key, which PyYAML (and so most Python configs) honours and yaml-cpp reads as a
// plain key "<<": the entries of `node`, then those of the mappings `<<` names (`<<: *base` or
// `<<: [*a, *b]`) that no entry before them has, as PyYAML merges them. Not recursive: a section
// written out replaces the merged one whole.
std::vector<std::pair<YAML::Node, YAML::Node>> merged_entries(const YAML::Node& node, const std::string& prefix,
                                                              const std::string& origin) {
  std::vector<std::pair<YAML::Node, YAML::Node>> entries, merged;
  std::set<std::string> names;
  for (const auto& entry : node) {
    if (entry.first.Scalar() != "<<") {
      entries.emplace_back(entry.first, entry.second);
      names.insert(entry.first.Scalar());
      continue;
    }
    const auto& value = entry.second;
    std::vector<YAML::Node> sources;
    if (value.IsMap()) sources.push_back(value);
    if (value.IsSequence())
      for (const auto& item : value) sources.push_back(item);
    if (sources.empty() || std::any_of(sources.begin(), sources.end(), [](const YAML::Node& n) { return !n.IsMap(); }))
      throw UsageError(where(origin, entry.first.Mark()) + ": '" + (prefix.empty() ? "" : prefix + ".") +
                           "<<' merges mappings into this one, and it is given something else",
                       "write <<: *name, where &name marks a mapping (defaults: &name {...}), or <<: [*a, *b]");
    for (const auto& source : sources)
      for (const auto& entry_there : source) merged.emplace_back(entry_there.first, entry_there.second);
  }
  for (const auto& entry : merged)
    if (names.insert(entry.first.Scalar()).second) entries.push_back(entry);
  return entries;
}

// A top-level key "x-..." holds what the config itself reads nothing from, such as the mappings
// that merge keys copy (docker compose's extension fields use the same prefix).
bool is_extension_key(const std::string& prefix, const std::string& name) { return prefix.empty() && name.rfind("x-", 0) == 0; }

// `file` is the config file the node is from, "" for a built-in config (whose paths are no file's).
void apply_node(Config& config, const std::string& prefix, const YAML::Node& node, const std::string& origin, const std::string& file,
                Problems& problems, GivenKeys& given) {
  std::vector<std::pair<YAML::Node, YAML::Node>> entries;
  problems.check([&] { entries = merged_entries(node, prefix, origin); });
  std::set<std::string> seen;  // merged entries are each a key no other entry has
  for (const auto& entry : entries)
    problems.check([&] {
      const std::string at = where(origin, entry.first.Mark());
      if (!entry.first.IsScalar())  // YAML's complex key, `? [a, b]`: its Scalar() is ""
        throw UsageError(at + ": a key is a " + (entry.first.IsMap() ? "mapping" : "list") + ", not a name",
                         "write keys as names, one a line: epochs: 3");
      const std::string name = entry.first.Scalar();
      const std::string key = prefix.empty() ? name : prefix + "." + name;
      if (!seen.insert(name).second) throw UsageError(at + ": '" + key + "' is set twice in the same mapping", "keep one of the two lines");
      if (is_extension_key(prefix, name)) return;
      const std::string value_at = where(origin, entry.second.Mark());
      if (const Field* field = find_field(key)) {
        field->assign(config, FieldValue{entry.second, value_at, key});
        given[key] = {file, value_at};
      } else if (is_section(key)) {
        if (entry.second.IsNull()) return;                                                            // "logging:" with nothing under it
        if (const Field* name_field = shorthand_field(key); name_field && entry.second.IsScalar()) {  // "device: cuda"
          name_field->assign(config, FieldValue{entry.second, value_at, key + ".name"});
          given[key + ".name"] = {file, value_at};
          return;
        }
        if (!entry.second.IsMap())
          throw UsageError(at + ": '" + key + "' is a section, not a value", "write its keys under it, indented: " + section_keys(key));
        apply_node(config, key, entry.second, origin, file, problems, given);
      } else {
        // Hydra's defaults list composes configs, which gputrain does with files given in order.
        const auto guess = key == "defaults" && entry.second.IsSequence()
                               ? "; Hydra composes configs from a defaults list, gputrain from files given in order, each "
                                 "overriding the ones before: gputrain train base.yaml this.yaml"
                               : did_you_mean(key);
        // No section's misspelling at the top: perhaps a mapping kept for merge keys to copy.
        const std::string holder = prefix.empty() && guess.empty()
                                       ? "; a key gputrain should not read (one holding anchors for <<: *name) starts with x-, as x-" + name
                                       : "";
        throw UsageError(at + ": unknown key '" + key + "'" + guess,
                         unknown_key_remedy(key, "see docs/configuration.md for every key, or run with --print-config") + holder);
      }
    });
}

void apply_document(Config& config, const std::string& text, const std::string& origin, const std::string& file, Problems& problems,
                    GivenKeys& given) {
  refuse_pasted_characters(text, origin, false);
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own bound, which it reports as "bad file"
    throw UsageError(where(origin, e.mark) + ": lists or mappings are nested more than " + std::to_string(e.depth() - 1) +
                         " deep, more than gputrain reads",
                     "a config needs a few levels: close the brackets you meant to close, or flatten the value");
  } catch (const YAML::ParserException& e) {
    throw UsageError(where(origin, e.mark) + ": not valid YAML: " + e.msg, yaml_syntax_remedy(text, e.msg, e.mark.line));
  }
  if (documents.empty()) return;
  // yaml-cpp's Load reads the first document alone: the rest of the file went unread, silently.
  for (std::size_t i = 1; i < documents.size(); ++i)
    if (!documents[i].IsNull())
      throw UsageError(
          where(origin, documents[i].Mark()) + ": a second YAML document, after a '---' line: gputrain reads one per config file",
          "delete the '---' line to make one document of them, or put the second in a file of its own and give both files "
          "(later files override earlier ones)");
  const YAML::Node& root = documents.front();
  if (root.IsNull()) return;
  if (!root.IsMap())
    throw UsageError(where(origin, root.Mark()) + ": a config file must be a mapping of sections (model:, train:, ...)",
                     "start the file with a section such as 'train:'");
  refuse_unread_tags(root, "", origin);
  apply_node(config, "", root, origin, file, problems, given);
}

// Config files that set nothing (empty, or comments only: a truncated copy, the wrong file) and
// nothing else given: the run would train the built-in defaults on synthetic data, which nobody
// asks for that way (a bare `gputrain train` is refused for the same reason).
[[noreturn]] void refuse_empty_configs(const std::vector<std::string>& files) {
  const auto named = files.size() == 1 ? "config file '" + files.front() + "' sets" : "the config files (" + core::join(files) + ") set";
  throw UsageError(named + " nothing: empty, or comments only",
                   "give a config that sets the run up (configs/ holds ready ones: configs/quickstart.yaml); the built-in "
                   "defaults train on synthetic data, which --set alone asks for (e.g. --set train.epochs=1)");
}

// The YAML files a folder given as the config holds (a run folder's config.yaml, configs/).
std::string config_in_folder_remedy(const std::string& folder) {
  std::vector<std::string> configs;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const auto extension = it->path().extension();
    if ((extension == ".yaml" || extension == ".yml") && it->is_regular_file(ec)) configs.push_back(it->path().string());
  }
  std::sort(configs.begin(), configs.end());
  const auto run_config = (std::filesystem::path(folder) / "config.yaml").string();
  if (std::find(configs.begin(), configs.end(), run_config) != configs.end())
    return "name the config in it: gputrain train " + run_config + (core::DirectoryLock::used_by_a_run(folder) ? " (the run's own)" : "");
  if (configs.empty()) return "name a YAML file, e.g. " + (std::filesystem::path(folder) / "train.yaml").string();
  return "name one of its YAML files: " + core::join_first(configs, 8);
}

std::string read_config_file(const std::string& path) {
  if (path == "-")  // ranks a launcher starts could not all read one standard input
    throw UsageError("gputrain reads a config from a file, and '-' (standard input) is not one",
                     "give the file, or, for one process, a command's output as one: gputrain train <(your-command)");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw UsageError("config file '" + path + "' does not exist" + core::did_you_mean(path),
                     path == "help" ? "for the options and examples, --help: gputrain train --help, gputrain profile --help"
                                    : "check the path (configs/ holds ready configs)");
  if (std::filesystem::is_directory(path, ec))  // an ifstream opens a folder and reads nothing from it
    throw UsageError("config file '" + path + "' is a folder", config_in_folder_remedy(path));
  // `gputrain train data.csv`: the data where the config goes.
  if (const auto source = data::source_for_path(path); !source.empty())
    throw UsageError("'" + path + "' is " + source + " data, not a YAML config",
                     "train on it with gputrain train --set data.path=" + path +
                         " --set data.labels=" + (source == "csv" ? "COLUMN" : "LABELS") + ", or write a config with data.path: " + path +
                         " (configs/ holds ready ones)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read config file '" + path + "'", "check its permissions");
  // A config is a few KB: read no further than a bound, so that a data file named by mistake
  // (`gputrain train train.csv`) or /dev/zero is refused, not read whole into memory.
  constexpr std::size_t kMostBytes = 4u << 20;
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMostBytes && (in.read(chunk, sizeof chunk) || in.gcount() > 0))
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMostBytes)
    throw UsageError("config file '" + path + "' is over 4 MiB, more than any config: is it a data file?",
                     "give the YAML config first (gputrain train CONFIG.yaml) and the data as data.path in it, or --set "
                     "data.path=" +
                         path);
  return text;
}

// A --set value YAML reads as nothing though something was written (`#x.csv` is a comment, `&x`
// an anchor, `!x` a tag, `%x` a directive) would unset the key unsaid: refused, with the quoting.
void refuse_vanished_value(const YAML::Node& value, const std::string& text, const std::string& origin, const std::string& key) {
  const auto start = text.find_first_not_of(" \t");
  if (!value.IsNull() || start == std::string::npos) return;
  const std::string written = text.substr(start, text.find_last_not_of(" \t") - start + 1);
  if (written == "null" || written == "Null" || written == "NULL" || written == "~") return;
  const char first = written.front();
  const std::string why = first == '#'   ? "# starts a comment"
                          : first == '&' ? "& names an anchor"
                          : first == '!' ? "! starts a tag"
                          : first == '%' ? "% starts a directive"
                                         : "YAML's syntax";
  throw UsageError(origin + ": YAML reads '" + written + "' as no value (" + why + "), which would unset " + key,
                   "quote the value: --set '" + key + "=\"" + written + "\"'");
}

void apply_override(Config& config, const std::string& assignment, GivenKeys& given) {
  const auto eq = assignment.find('=');
  const std::string origin = "--set " + assignment;
  if (eq == std::string::npos || eq == 0)
    throw UsageError(origin + ": expected KEY=VALUE, e.g. --set train.max_steps=100", "write the key, '=', then the value");
  const std::string key = assignment.substr(0, eq);
  const Field* field = find_field(key);
  if (!field) field = shorthand_field(key);
  if (!field) {
    if (is_section(key)) throw UsageError(origin + ": '" + key + "' is a section; set one of its keys", "its keys: " + section_keys(key));
    throw UsageError(origin + ": unknown key '" + key + "'" + did_you_mean(key),
                     unknown_key_remedy(key, "see docs/configuration.md for every key"));
  }
  const std::string text = assignment.substr(eq + 1);
  refuse_pasted_characters(text, origin, true);
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UsageError(origin + ": the value is not valid YAML: " + e.msg, "quote it, or write lists as [1, 2]");
  }
  refuse_vanished_value(value, text, origin, key);
  refuse_unread_tags(value, key, origin, false);
  field->assign(config, FieldValue{value, origin, key});
  given[field->key] = {"", origin};
}

void apply_flag(Config& config, const FlagSetting& setting, GivenKeys& given) {
  const Field* field = find_field(setting.key);
  if (!field) throw std::logic_error("flag " + setting.flag + " sets unknown key " + setting.key);
  YAML::Node value;
  if (setting.values.size() == 1) {
    value = YAML::Node(setting.values.front());
  } else {
    for (const auto& item : setting.values) value.push_back(item);
  }
  const std::string origin = setting.flag + " " + core::join(setting.values, " ");
  field->assign(config, FieldValue{value, origin, setting.key});
  given[setting.key] = {"", origin};
}

}  // namespace

Config load_config(const ConfigSources& sources) {
  Config config;
  Problems problems;
  GivenKeys given;
  if (!sources.embedded_yaml.empty())
    problems.check([&] { apply_document(config, sources.embedded_yaml, "built-in config", "", problems, given); });
  for (const auto& file : sources.files)
    problems.check([&] { apply_document(config, read_config_file(file), file, file, problems, given); });
  for (const auto& assignment : sources.overrides) problems.check([&] { apply_override(config, assignment, given); });
  for (const auto& setting : sources.flags) problems.check([&] { apply_flag(config, setting, given); });
  for (const auto& key : given)  // not a structured binding: C++17 lambdas cannot capture one
    if (!key.second.file.empty() && is_input_path_key(key.first))
      problems.check([&] { check_path_beside_config(config, key.first, key.second); });
  problems.throw_if_any();
  if (!sources.files.empty() && given.empty()) refuse_empty_configs(sources.files);
  if (!given.count("data.source") && given.count("data.path")) tell_data_source(config, given.at("data.path").where);
  resolve_mlflow_settings(config.logging.mlflow);
  check_consistency(config);  // its checks read several keys, so they need each to be valid first
  config.origins = std::move(given);
  return config;
}

// The node a dotted key names, one mapping per part ("logging.alerts.grad_norm"), made where
// `make` and missing; undefined where missing otherwise. reset(), not =, moves along: a Node's =
// writes into the node it refers to.
YAML::Node node_at(YAML::Node root, const std::string& key, bool make) {
  YAML::Node node;
  node.reset(root);
  std::size_t from = 0;
  for (auto dot = key.find('.');; dot = key.find('.', from)) {
    const std::string part = key.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (!make && (!node.IsMap() || !node[part].IsDefined())) return YAML::Node(YAML::NodeType::Undefined);
    YAML::Node next = node[part];
    node.reset(next);
    if (dot == std::string::npos) return node;
    from = dot + 1;
  }
}

std::string to_yaml(const Config& config) {
  YAML::Node root(YAML::NodeType::Map);  // a node of its own from the start: node_at's handles refer to it
  for (const auto& field : schema()) node_at(root, field.key, true) = field.show(config);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> config_differences(const std::string& before_yaml, const std::string& after_yaml) {
  const auto before = YAML::Load(before_yaml), after = YAML::Load(after_yaml);
  std::vector<std::string> out;
  for (const auto& key : config_keys()) {
    const auto was = node_at(before, key, false), is = node_at(after, key, false);
    if (!was.IsDefined() || !is.IsDefined()) continue;  // a key one of the two versions did not have
    const auto was_text = value_text(was), is_text = value_text(is);
    if (was_text != is_text)
      out.push_back(key + " " + (was_text.empty() ? "\"\"" : was_text) + " -> " + (is_text.empty() ? "\"\"" : is_text));
  }
  return out;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const auto& field : schema()) keys.push_back(field.key);
  return keys;
}

}  // namespace gputrain::train
