#pragma once
// Writers for verify results: a readable report, the documented JSON schema, JUnit XML.

#include <ostream>
#include <string>
#include <vector>

#include "gputrain/checks/check.hpp"
#include "gputrain/checks/runner.hpp"

namespace gputrain::checks {

/// Counts per status.
struct Tally {
  int pass = 0, warn = 0, fail = 0, skip = 0, timeout = 0;
};
/// How many outcomes have each status.
Tally tally(const std::vector<Outcome>& outcomes);

/// The schema version of `to_json` (docs/verify.md). Bumped on any incompatible change.
constexpr int kVerifySchemaVersion = 1;

/// One check's line (status mark, title, detail) and, for warn/fail/timeout, its fix.
void write_outcome(std::ostream& out, const Outcome& outcome, bool color);

/// The area heading printed before the first check of an area.
void write_area_heading(std::ostream& out, const std::string& area, bool color);

/// The one-line summary: "verify: 21 pass, 2 warn, 0 fail, 5 skip, 0 timeout in 0.41 s -> exit 0"
/// (`command` names the command that ran the checks).
std::string summary_line(const std::vector<Outcome>& outcomes, double seconds, int exit_code, const std::string& command = "verify");

/// The whole run as JSON (schema kVerifySchemaVersion; see docs/verify.md); `tool` is
/// "gputrain <command>".
std::string to_json(const Context& context, const std::vector<Outcome>& outcomes, double seconds, int exit_code,
                    const std::string& command = "verify");

/// JUnit XML: one <testsuite> per area, one <testcase> per check; fail and timeout are
/// <failure>, skip is <skipped>, warn passes with its detail in <system-out>.
std::string to_junit(const std::vector<Outcome>& outcomes, double seconds, const std::string& command = "verify");

}  // namespace gputrain::checks
