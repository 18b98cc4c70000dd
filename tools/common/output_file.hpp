#pragma once
// Files a command writes where an option says (--junit, --trace, --plot): a folder given as one is
// refused while parsing (their folders are checked before any work: core::refuse_unwritable_file).

#include <CLI/CLI.hpp>

#include <string>

namespace gputrain::tools {

/// A CLI11 check for an output file option: a path that is a folder is refused, naming a file in
/// it, and so is an empty one and one that starts with '-' (an option typed where the file's name
/// was left out).
CLI::Validator output_file(const std::string& example_name);

}  // namespace gputrain::tools
