#pragma once
// Durations as people write them in a config or on a command line: "45m", "2h", "1h30m", "1d",
// or a clock as SLURM (`--time 1-12:00:00`) and Lightning (`max_time="00:12:00:00"`) take it.

#include <optional>
#include <string>

namespace gputrain::core {

/// Seconds of `text`, or nullopt when it is not a duration. Accepted:
/// - numbers with units d, h, m, s, largest first, each once: "90s", "45m", "1.5h", "1h30m", "1d 12h";
/// - a clock: "H:MM:SS", SLURM's "D-H:MM:SS" and Lightning's "DD:HH:MM:SS".
/// A bare number ("30") and "MM:SS" are refused: SLURM reads them as minutes, others as seconds.
std::optional<double> parse_duration(const std::string& text);

/// The shortest text parse_duration reads back: 5400 -> "1h30m", 86400 -> "1d", 0.5 -> "0.5s".
std::string duration_text(double seconds);

}  // namespace gputrain::core
