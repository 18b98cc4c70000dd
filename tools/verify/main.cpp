// gputrain verify: is this box ready to train, and if not, what exactly to fix.
#include <iostream>

#include "check_report.hpp"
#include "command.hpp"
#include "gputrain/checks/report.hpp"
#include "gputrain/checks/runner.hpp"
#include "gputrain/checks/verify.hpp"
#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/build_info.hpp"
#include "gputrain/core/process_time.hpp"
#include "gputrain/core/write_error.hpp"

using namespace gputrain;

int main(int argc, char** argv) {
  CLI::App app{
      "gputrain verify: check that this machine is ready to train on its GPUs, and say what to fix.\n\n"
      "Exit codes: 0 all checks pass (warnings allowed), 1 a check failed or timed out,\n"
      "2 bad usage, 3 no usable GPU (see --allow-cpu). The JSON schema is in docs/verify.md.",
      "gputrain verify"};
  std::string level = "quick";
  bool json = false, allow_cpu = false, no_color = false;
  std::string junit;
  app.add_option("--level", level, "quick (default, short measurements) or full (adds a 40 s burn and larger transfers)")
      ->check(CLI::IsMember({"quick", "full"}))
      ->envname("GPUTRAIN_VERIFY_LEVEL");
  app.add_flag("--json", json, "write the results as JSON to stdout (the report goes to stderr)");
  tools::add_junit_option(app, junit);
  app.add_flag("--allow-cpu", allow_cpu, "treat \"no GPU\" as a warning, so CPU-only CI can pass")->envname("GPUTRAIN_ALLOW_CPU");
  app.add_flag("--no-color", no_color, "plain text even on a terminal (TERM=dumb too; FORCE_COLOR=1 colours a pipe)")->envname("NO_COLOR");
  tools::add_logging_options(app);

  const int code = tools::run_command(app, argc, argv, [&] {
    const auto lvl = level == "full" ? checks::Level::full : checks::Level::quick;
    if (!junit.empty()) core::refuse_unwritable_file(junit, "--junit");  // before the checks, not after them
    auto context = checks::gather_context(lvl, allow_cpu);
    const auto stream = tools::report_stream(json, no_color);  // not a structured binding: the lambdas below capture them
    auto& report = stream.out;
    const bool color = stream.color;
    report << "gputrain " << core::build_info().gputrain_version << " verify (level " << level << ")\n";

    std::string area;
    const auto outcomes = checks::run_checks(checks::verify_checks(*context), context, [&](const checks::Outcome& o) {
      if (o.area != area) checks::write_area_heading(report, area = o.area, color);
      checks::write_outcome(report, o, color);
      report.flush();
    });
    const double seconds = core::seconds_since_process_start();  // what the user waited, LibTorch's loading included
    const int exit_code = tools::checks_exit_code(outcomes, context->inventory.gpus.empty() && !allow_cpu);
    report << checks::summary_line(outcomes, seconds, exit_code) << "\n";
    if (json) std::cout << checks::to_json(*context, outcomes, seconds, exit_code) << "\n";
    if (!junit.empty()) tools::write_junit(junit, checks::to_junit(outcomes, seconds));
    return exit_code;
  });
  return tools::exit_after_checks(code);
}
