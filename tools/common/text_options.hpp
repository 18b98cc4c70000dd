#pragma once
// An option given an empty value (`--evaluate "$WEIGHTS"` with WEIGHTS unset) is refused while
// parsing: taken as absent, it changed what the command did (training instead of evaluating).

#include <CLI/CLI.hpp>

#include <string>

namespace gputrain::tools {

/// Refuses an empty value, naming what the option takes ("give a weights file, e.g. best.pt").
CLI::Validator not_empty(const std::string& what_to_give);

/// The message not_empty gives (output_file's check gives it too).
std::string empty_value_message(const std::string& what_to_give);

}  // namespace gputrain::tools
