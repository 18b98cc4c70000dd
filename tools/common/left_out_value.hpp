#pragma once
// An option whose value was left out reaches CLI11 in two shapes: last on the command line
// ("--nnodes: 1 required N:from 1 to 100000 missing"), or followed by another option that CLI11
// takes for its value ("--precision: --json not in {fp32,fp16-mixed,bf16-mixed}"). Both are said
// as what happened, with what the option takes.

#include <optional>
#include <string>
#include <utility>

namespace gputrain::tools {

/// The message and fix for CLI11's `message` when it is one of those shapes; nothing otherwise.
std::optional<std::pair<std::string, std::string>> value_left_out(const std::string& message);

}  // namespace gputrain::tools
