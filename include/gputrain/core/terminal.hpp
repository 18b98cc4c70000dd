#pragma once
// Whether a command's output gets colour: the conventions users set in their environment
// (no-color.org's NO_COLOR, force-color.org's FORCE_COLOR, CLICOLOR_FORCE, TERM=dumb) over the
// guess from whether the output is a terminal.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "gputrain/core/env.hpp"

namespace gputrain::core {

/// Looks an environment variable up (core::env, or a map in tests).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

/// Never with `no_color` (--no-color, or NO_COLOR through its twin) or TERM=dumb; always with
/// FORCE_COLOR or CLICOLOR_FORCE set to anything but "" or "0", even into a pipe (a CI log that
/// shows colour); otherwise when the output is a terminal.
bool color_wanted(bool terminal, bool no_color, const EnvLookup& lookup = env);

/// The width of the terminal on `fd` in columns, asked anew each call (a resized tmux pane or
/// window counts at once); else $COLUMNS; else 80.
int terminal_columns(int fd, const EnvLookup& lookup = env);

/// How often the terminal was resized (SIGWINCH) since the first call, which starts counting (a
/// handler the process had before is still called). A progress bar redraws when it changes.
std::uint64_t terminal_resizes();

}  // namespace gputrain::core
