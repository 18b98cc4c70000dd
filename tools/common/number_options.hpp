#pragma once
// CLI11's number checks speak in doubles ("Value 0 not in range 0.000000 to 1797693134862315...",
// 310 digits, for `--batch-size 0` and `--batch-size abc` alike): this one says what was wrong
// with the value and which whole numbers the option takes.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>

namespace gputrain::tools {

/// Accepts a whole number from `min` to `max` (decimal, no sign but a leading '-'); else the
/// error names the value and the range ("0 is too small: give a whole number, from 1 to 1024",
/// "'abc' is not a whole number: give one, 0 or more").
CLI::Validator whole_number(std::int64_t min, std::int64_t max = std::numeric_limits<std::int64_t>::max());

}  // namespace gputrain::tools
