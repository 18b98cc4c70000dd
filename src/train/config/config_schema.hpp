#pragma once
// The configuration schema: one Field per YAML key, with how to read, check and show it.
// Private to the train area; docs/configuration.md documents the same keys (a test compares).

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// A value found in a document, with where it was found ("file:line:col" or "--set k=v").
struct FieldValue {
  YAML::Node node;
  std::string where;
  std::string key;
};

struct Field {
  std::string key;                                         ///< "train.batch_size"
  std::function<void(Config&, const FieldValue&)> assign;  ///< parses, checks, stores; throws UsageError
  std::function<YAML::Node(const Config&)> show;           ///< the resolved value, for --print-config
};

/// Every key, in the order --print-config shows them.
const std::vector<Field>& schema();

/// The field for `key`, or nullptr.
const Field* find_field(const std::string& key);

/// A value as the printed config shows it: a scalar's text, a list in flow style ("[256, 128]").
std::string value_text(const YAML::Node& node);

}  // namespace gputrain::train
