#pragma once
// Files a command writes where an option says (--junit, --trace, --plot): a folder given as one is
// refused while parsing (their folders are checked before any work: core::refuse_unwritable_file).

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace gputrain::tools {

/// What an option writes: `what` ("a trace") and how such a file starts, after any whitespace.
struct OutputKind {
  std::string what;
  std::vector<std::string> starts;
};

/// A CLI11 check for an output file option: a path that is a folder is refused, naming a file in
/// it, and so is an empty one and one that starts with '-' (an option typed where the file's name
/// was left out), and a file that is not empty and not of `kind`: the option took the argument
/// after it (`profile --trace c.yaml c.yaml` wrote the trace over the config it profiled).
CLI::Validator output_file(const std::string& example_name, const OutputKind& kind);

}  // namespace gputrain::tools
