#pragma once
// The "fix:" line for a config yaml-cpp could not parse. yaml-cpp names the place it gave up,
// which is rarely the place the mistake is (a tab, a key one space off, a '[' never closed).
// The analysis reads user text: it is linear and bounded, with no std::regex (whose recursion
// overflows the stack on a long line).

#include <string>

namespace gputrain::train {

/// What to do about yaml-cpp's `message` at 0-based `error_line` of `text`.
std::string yaml_syntax_remedy(const std::string& text, const std::string& message, int error_line);

}  // namespace gputrain::train
