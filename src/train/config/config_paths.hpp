#pragma once
// Paths in a config file are taken from the folder gputrain runs in, as torchrun's and Lightning's
// are. A config written to be run from its own folder names files that are not here but next to
// it: that is said at load time, with both fixes, instead of "does not exist" once the data opens.

#include <string>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// A path key's value as a shell would have expanded it: a leading `~` (alone or before '/') is
/// $HOME, and `$NAME` or `${NAME}` is that environment variable; any other '$' stays as written.
/// A variable that is not set is a UsageError at `where` naming it, as a path with the name left
/// in would only fail later as "does not exist".
std::string expand_path(const std::string& text, const std::string& key, const std::string& where);

/// Whether `key` holds a path to a file that must exist (data.path, model.init_weights, ...).
bool is_input_path_key(const std::string& key);

/// Throws UsageError, at the line that set it, when `key`'s path (or one of its list of paths) in
/// `config` was set relative by the config file `origin`, is missing from the current folder and
/// exists next to that file.
void check_path_beside_config(const Config& config, const std::string& key, const KeyOrigin& origin);

/// data.source for a config that sets data.path but no source: the format the path names (its
/// extension, or what its folder holds: data::source_for_path), as `gputrain profile --path` does.
/// Throws UsageError at `path_origin`, where data.path was set, when the path does not exist and
/// its name tells nothing, or when its format cannot be told.
void tell_data_source(Config& config, const std::string& path_origin);

}  // namespace gputrain::train
