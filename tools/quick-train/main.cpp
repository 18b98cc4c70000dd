// gputrain quick-train: the end-to-end smoke test CI runs to prove a GPU training step works here.
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
#include "gputrain/device/select.hpp"
#include "gputrain/quick_train/quick_train.hpp"
#include "number_options.hpp"

using namespace gputrain;

int main(int argc, char** argv) {
  CLI::App app{
      "gputrain quick-train: six steps that prove end-to-end GPU training works on this machine:\n"
      "device detection, CUDA settings, model creation and transfer, forward pass with autocast,\n"
      "backward pass with the GradScaler, and a short training loop whose loss must fall.\n"
      "Synthetic data and a small CNN are built in: no files needed.\n\n"
      "Exit codes: 0 all steps pass, 1 a step failed, 2 bad usage, 3 no usable GPU (see --allow-cpu).",
      "gputrain quick-train"};
  quick_train::QuickTrainOptions options;
  std::string precision = "fp16-mixed", junit;
  bool json = false, allow_cpu = false, no_color = false;
  // A device that is not one of the forms is a typo (exit 2), not a missing GPU (exit 3).
  app.add_option("--device", options.device, "auto (default), cpu, cuda or cuda:N")
      ->envname("GPUTRAIN_DEVICE")
      ->check([](const std::string& value) -> std::string {
        if (device::is_device_spec(value)) return "";
        const auto near = device::near_device_spec(value);
        return "'" + value + "' is not a device: use auto, cpu, cuda or cuda:N" + (near.empty() ? "" : " (did you mean " + near + "?)");
      });
  app.add_option("--precision", precision, "fp16-mixed (default: exercises the GradScaler), bf16-mixed or fp32")
      ->check(CLI::IsMember({"fp32", "fp16-mixed", "bf16-mixed"}));
  app.add_option("--batch-size", options.batch_size, "samples per step (default 32)")->check(tools::whole_number(1, 1 << 30));
  app.add_option("--iterations", options.iterations, "steps of the final loop (default 10)")->check(tools::whole_number(2, 100000));
  app.add_flag("--json", json, "write the results as JSON to stdout (the report goes to stderr)");
  tools::add_junit_option(app, junit);
  app.add_flag("--allow-cpu", allow_cpu, "run on the CPU when there is no GPU, and pass")->envname("GPUTRAIN_ALLOW_CPU");
  app.add_flag("--no-color", no_color, "plain text even on a terminal (TERM=dumb too; FORCE_COLOR=1 colours a pipe)")->envname("NO_COLOR");
  tools::add_logging_options(app);

  const int code = tools::run_command(app, argc, argv, [&] {
    options.precision = precision == "fp32"         ? train::Precision::fp32
                        : precision == "bf16-mixed" ? train::Precision::bf16_mixed
                                                    : train::Precision::fp16_mixed;
    if (!junit.empty()) core::refuse_unwritable_file(junit, "--junit");  // before the checks, not after them
    auto context = checks::gather_context(checks::Level::quick, allow_cpu);
    const auto stream = tools::report_stream(json, no_color);  // not a structured binding: the lambdas below capture them
    auto& report = stream.out;
    const bool color = stream.color;
    report << "gputrain " << core::build_info().gputrain_version << " quick-train\n";
    const auto outcomes = checks::run_checks(quick_train::quick_train_steps(options), context, [&](const checks::Outcome& o) {
      checks::write_outcome(report, o, color);
      report.flush();
    });
    const double seconds = core::seconds_since_process_start();  // what the user waited, LibTorch's loading included
    const bool gpu_missing = context->inventory.gpus.empty() && !allow_cpu && options.device != "cpu";
    const int exit_code = tools::checks_exit_code(outcomes, gpu_missing);
    report << checks::summary_line(outcomes, seconds, exit_code, "quick-train") << "\n";
    if (json) std::cout << checks::to_json(*context, outcomes, seconds, exit_code, "quick-train") << "\n";
    if (!junit.empty()) tools::write_junit(junit, checks::to_junit(outcomes, seconds, "quick-train"));
    return exit_code;
  });
  return tools::exit_after_checks(code);
}
