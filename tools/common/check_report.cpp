#include "check_report.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "gputrain/checks/report.hpp"
#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/terminal.hpp"
#include "gputrain/core/write_error.hpp"
#include "output_file.hpp"

namespace gputrain::tools {

int checks_exit_code(const std::vector<checks::Outcome>& outcomes, bool gpu_required_but_missing) {
  if (gpu_required_but_missing) return int(ExitCode::environment);
  const auto t = checks::tally(outcomes);
  return t.fail + t.timeout > 0 ? int(ExitCode::failure) : int(ExitCode::ok);
}

void add_junit_option(CLI::App& app, std::string& path) {
  app.add_option("--junit", path, "also write JUnit XML to this file, for CI systems (its folders are made)")
      ->type_name("FILE")
      ->check(output_file("report.xml", {"a JUnit report", {"<?xml", "<testsuites"}}));
}

void write_junit(const std::string& path, const std::string& xml) {
  core::make_folders_for_file(path, "--junit");
  core::write_named_file(path, xml);
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
