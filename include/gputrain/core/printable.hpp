#pragma once
// Names from data reach the console inside gputrain's own lines: a class name from a CSV, a cell,
// a folder name. Printed raw, an escape sequence in one would move the cursor, clear the screen or
// set the window's title, and a carriage return would overwrite the line before it.

#include <string>
#include <string_view>

namespace gputrain::core {

/// `text` with each character a terminal acts on written as an escape: the C0 controls other than
/// newline and tab (`\r`, `\x1b`, `\x07`), DEL (`\x7f`) and the C1 controls in UTF-8 (`\u009b`);
/// and each that shows nothing or reorders the text after it: zero-width spaces (`\u200b`) and
/// bidirectional overrides (`\u202e`, with which 'txt.exe' can show as 'exe.txt').
/// What the console and training.log are given; other text comes back unchanged.
std::string printable(std::string_view text);

/// `name` in single quotes for a one-line message: as `printable`, with a newline or tab written
/// as `\n` or `\t` too, so that a name never breaks its line; past `most` bytes (a free-text cell),
/// cut between two characters and ended with "...".
std::string quoted(std::string_view name, std::size_t most = std::string_view::npos);

}  // namespace gputrain::core
