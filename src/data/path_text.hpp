#pragma once
// How a data path that cannot be used is named in errors. Private to the data area.

#include <string>

namespace gputrain::data {

/// When `path` does not exist: "'data/train' does not exist", and for a relative path where it was
/// looked for ("relative to the current folder /home/me, not to the config file"), the usual
/// surprise, then the path most likely meant (core::similar_path), if any. Otherwise `otherwise`
/// (the caller's own reason: not a folder, permission denied).
std::string unusable_path_text(const std::string& path, const std::string& otherwise);

}  // namespace gputrain::data
