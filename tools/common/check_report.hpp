#pragma once
// What the commands that run checks (verify, quick-train) share after the checks have run: the
// exit code, the report stream, the JUnit file, and leaving safely when a check hung.

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "gputrain/checks/runner.hpp"

namespace gputrain::tools {

/// 3 when a GPU was required and none is visible (it outranks the failures it causes), 1 when a
/// check failed or timed out, else 0 (warnings allowed).
int checks_exit_code(const std::vector<checks::Outcome>& outcomes, bool gpu_required_but_missing);

/// Where the human report goes: stdout, or stderr when stdout carries --json. Colour only on a
/// terminal and without --no-color.
struct ReportStream {
  std::ostream& out;
  bool color;
};
ReportStream report_stream(bool json, bool no_color);

/// Adds --junit FILE to `app`: a path that is a folder is refused before any check runs (exit 2),
/// with a file in it as the fix; so is one whose folders cannot be made (core::refuse_unwritable_file).
void add_junit_option(CLI::App& app, std::string& path);

/// Writes the JUnit XML to `path` atomically, making its missing folders first (as pytest's
/// --junitxml does).
void write_junit(const std::string& path, const std::string& xml);

/// Returns `code`, or, when a check thread was left running (a hung driver call), flushes and
/// ends the process with it at once: normal exit would run destructors that thread may still use.
int exit_after_checks(int code);

}  // namespace gputrain::tools
