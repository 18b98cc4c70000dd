#pragma once
// YAML tags a config may not carry. yaml-cpp keeps a tag beside the value and gputrain reads the
// value alone, so `optimizer: !!python/object:torch.optim.Adam {lr: 1}` (PyYAML's yaml.dump of an
// object) trained AdamW, and `path: !include other.yaml` read the file name as the value.

#include <yaml-cpp/mark.h>
#include <yaml-cpp/node/node.h>

#include <string>

namespace gputrain::train {

/// "origin:line:column" of a mark (1-based), or origin where the mark has no place.
std::string where(const std::string& origin, const YAML::Mark& mark);

/// Throws UsageError naming the first node under `node` (keyed `key`, "" at a document's root)
/// whose tag changes what its value means, at origin:line:column (at origin alone for a value
/// that is not a file's, `in_file` false). Standard scalars', mappings'
/// and sequences' tags, and PyYAML's for plain Python values (!!python/tuple), pass.
void refuse_unread_tags(const YAML::Node& node, const std::string& key, const std::string& origin, bool in_file = true);

}  // namespace gputrain::train
