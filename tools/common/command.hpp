#pragma once
// What every command shares: CLI11 parse errors become exit 2, a gputrain::Error is printed once
// as "error: ... / fix: ..." with its exit code, and common flags (--log-level) are declared once.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace gputrain::tools {

/// Adds --log-level (twin: GPUTRAIN_LOG_LEVEL) to a command.
void add_logging_options(CLI::App& app);

/// For a command with --set: what to say about an unknown `--flag` (given `value`) that is a
/// config key, as train::flag_as_setting says it; "" when it is none.
using SettingHint = std::function<std::string(const std::string& flag, const std::string& value)>;

/// `code`, or 1 when what the command wrote to standard output was not all written (`> file` on a
/// full disk, said as an error with its fix); a pipe whose reader left early (`| head`) is no failure.
int with_output_written(int code);

/// First re-executes without LD_LIBRARY_PATH folders that would mix a second build of a CUDA
/// library into the process (device::reexec_without_rival_cuda_folders). Then parses argv into
/// `app` and runs `body`; returns the process exit code. --help prints and
/// returns 0; a parse error prints CLI11's message and returns 2; a gputrain::Error prints its
/// message and fix and returns its code; any other exception returns 1.
int run_command(CLI::App& app, int argc, char** argv, const std::function<int()>& body, const SettingHint& setting_hint = {});

}  // namespace gputrain::tools
