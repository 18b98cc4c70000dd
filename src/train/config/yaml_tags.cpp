#include "yaml_tags.hpp"

#include <yaml-cpp/yaml.h>

#include <array>
#include <string_view>

#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"

namespace gputrain::train {

namespace {

constexpr std::string_view kCoreTags = "tag:yaml.org,2002:";  // what `!!` stands for

bool starts_with(std::string_view text, std::string_view start) { return text.substr(0, start.size()) == start; }

// "?" is a plain scalar's or a collection's own tag, "!" a quoted scalar's.
bool plain_tag(const std::string& tag) {
  if (tag.empty() || tag == "?" || tag == "!") return true;
  if (!starts_with(tag, kCoreTags)) return false;
  static constexpr std::array<std::string_view, 17> kPlain{
      "str",        "int",          "float",        "bool",        "null",       "map",
      "seq",        "python/tuple", "python/list",  "python/dict", "python/str", "python/unicode",
      "python/int", "python/long",  "python/float", "python/bool", "python/none"};
  const auto name = std::string_view(tag).substr(kCoreTags.size());
  for (const auto plain : kPlain)
    if (name == plain) return true;
  return false;
}

std::string written(const std::string& tag) { return starts_with(tag, kCoreTags) ? "!!" + tag.substr(kCoreTags.size()) : tag; }

std::string remedy(const std::string& tag) {
  if (starts_with(tag, std::string(kCoreTags) + "python/"))
    return "remove the tag and write the settings themselves (PyYAML's yaml.dump writes Python objects so; "
           "yaml.safe_dump writes plain values), e.g. optimizer: {name: adam, lr: 0.001}";
  if (tag == "!include" || tag == "!import" || tag == "!ref")
    return "gputrain composes configs from files given in order, each overriding the ones before: gputrain train base.yaml this.yaml";
  if (tag == "!ENV" || tag == "!env" || tag == "!env_var" || tag == "!Env")
    return "paths take environment variables as the shell writes them ($DATA/x.csv); for any other key, --set KEY=\"$VAR\"";
  return "remove the tag: gputrain reads plain values (numbers, strings, lists and mappings)";
}

}  // namespace

std::string where(const std::string& origin, const YAML::Mark& mark) {
  if (mark.line < 0) return origin;
  return origin + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

void refuse_unread_tags(const YAML::Node& node, const std::string& key, const std::string& origin, bool in_file) {
  if (!node.IsDefined()) return;
  if (!plain_tag(node.Tag())) {
    throw UsageError((in_file ? where(origin, node.Mark()) : origin) + ": " + (key.empty() ? "the document" : "'" + key + "'") +
                         " carries the YAML tag " + core::quoted(written(node.Tag()), 80) +
                         ", which gputrain does not read: the value would be taken without it",
                     remedy(node.Tag()));
  }
  if (node.IsMap())
    for (const auto& entry : node) {
      const auto name = entry.first.IsScalar() ? entry.first.Scalar() : "?";
      refuse_unread_tags(entry.second, key.empty() ? name : key + "." + name, origin, in_file);
    }
  if (node.IsSequence())
    for (std::size_t i = 0; i < node.size(); ++i) refuse_unread_tags(node[i], key + "[" + std::to_string(i) + "]", origin, in_file);
}

}  // namespace gputrain::train
