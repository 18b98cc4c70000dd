#pragma once
// Files a command writes where an option says (--junit, --trace): checked before any work, so a
// path that cannot be written is exit 2 at once, not an error after minutes of checks or steps.

#include <CLI/CLI.hpp>

#include <string>

namespace gputrain::tools {

/// A CLI11 check for an output file option: a path that is a folder is refused, naming a file in it.
CLI::Validator output_file(const std::string& example_name);

/// A UsageError (exit 2) naming `option` and the fix when the folders above `path` cannot be made
/// (a file in the way, no permission); nothing is made yet: the write makes them.
void refuse_unwritable(const std::string& path, const std::string& option);

}  // namespace gputrain::tools
