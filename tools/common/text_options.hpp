#pragma once
// An option given an empty value (`--evaluate "$WEIGHTS"` with WEIGHTS unset), or the next option
// as its value, is refused while parsing: taken as given, it changed what the command did
// (training instead of evaluating; --print-config not done).

#include <CLI/CLI.hpp>

#include <string>

namespace gputrain::tools {

/// Refuses an empty value, or an option standing where the value belongs (`--evaluate --json`),
/// naming what the option takes ("give a weights file, e.g. best.pt").
CLI::Validator required_value(const std::string& what_to_give);

/// The message required_value gives for an empty value (output_file's check gives it too).
std::string empty_value_message(const std::string& what_to_give);

}  // namespace gputrain::tools
