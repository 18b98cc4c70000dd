#include "param_groups_field.hpp"

#include <yaml-cpp/yaml.h>

#include "config_fields.hpp"
#include "gputrain/core/error.hpp"

namespace gputrain::train {
namespace {

using namespace fields;

const char* const kAllowed =
    "a list of entries such as {params: [layer4, fc], lr: 1.0e-3}, each with params (name prefixes, or "
    "default) and optionally lr and weight_decay";

const char* const kEntry = "an entry such as {params: [layer4, fc], lr: 1.0e-3} or {params: default}";

ParamGroupConfig parse_entry(const FieldValue& v, std::size_t index) {
  const std::string at = v.key + "[" + std::to_string(index) + "]";
  if (!v.node.IsMap()) {  // `- default` or `- fc`: the prefixes without their params key
    const std::string guess = v.node.IsScalar() ? "; did you mean {params: " + v.node.Scalar() + "}?" : "";
    reject(FieldValue{v.node, v.where, at}, found_text(v.node), kEntry, guess);
  }
  ParamGroupConfig group;
  for (const auto& entry : v.node) {
    const auto name = entry.first.Scalar();
    const FieldValue value{entry.second, v.where, at + "." + name};
    if (name == "params")
      group.params = value.node.IsScalar() ? std::vector<std::string>{parse_string(value, "a name prefix")} : parse_string_list(value);
    else if (name == "lr")
      group.lr = parse_double(value, 0.0, 3.4e38);  // float32's largest, as optimizer.lr
    else if (name == "weight_decay")
      group.weight_decay = parse_double(value, 0.0, 3.4e38);
    else
      reject(value, "the key '" + name + "'", "params, lr, weight_decay", guess_choice(name, {"params", "lr", "weight_decay"}));
  }
  if (group.params.empty())
    throw UsageError(v.where + ": " + at + " names no parameters", "give its params: name prefixes such as [layer4, fc], or default");
  return group;
}

YAML::Node shown(const std::vector<ParamGroupConfig>& groups) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& group : groups) {
    YAML::Node entry(YAML::NodeType::Map);
    YAML::Node params(YAML::NodeType::Sequence);
    for (const auto& p : group.params) params.push_back(p);
    params.SetStyle(YAML::EmitterStyle::Flow);
    entry["params"] = params;
    if (group.lr) entry["lr"] = shortest(*group.lr);
    if (group.weight_decay) entry["weight_decay"] = shortest(*group.weight_decay);
    entry.SetStyle(YAML::EmitterStyle::Flow);
    list.push_back(entry);
  }
  return list;
}

}  // namespace

Field param_groups_field() {
  return {"optimizer.param_groups",
          [](Config& c, const FieldValue& v) {
            if (v.node.IsNull()) {
              c.optimizer.param_groups.clear();
              return;
            }
            if (!v.node.IsSequence()) reject(v, found_text(v.node), kAllowed);
            std::vector<ParamGroupConfig> groups;
            for (std::size_t i = 0; i < v.node.size(); ++i) groups.push_back(parse_entry(FieldValue{v.node[i], v.where, v.key}, i));
            c.optimizer.param_groups = std::move(groups);
          },
          [](const Config& c) { return shown(c.optimizer.param_groups); }};
}

}  // namespace gputrain::train
