#include "check_report.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "gputrain/checks/report.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/terminal.hpp"

namespace gputrain::tools {

int checks_exit_code(const std::vector<checks::Outcome>& outcomes, bool gpu_required_but_missing) {
  if (gpu_required_but_missing) return int(ExitCode::environment);
  const auto t = checks::tally(outcomes);
  return t.fail + t.timeout > 0 ? int(ExitCode::failure) : int(ExitCode::ok);
}

ReportStream report_stream(bool json, bool no_color) {
  return ReportStream{json ? std::cerr : std::cout, core::color_wanted(isatty(json ? STDERR_FILENO : STDOUT_FILENO) != 0, no_color)};
}

int exit_after_checks(int code) {
  if (!checks::work_was_abandoned()) return code;
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(code);
}

}  // namespace gputrain::tools
