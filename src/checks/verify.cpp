#include "gputrain/checks/verify.hpp"

#include "check_sets.hpp"
#include "gputrain/checks/runner.hpp"

namespace gputrain::checks {

std::shared_ptr<Context> gather_context(Level level, bool allow_cpu, std::chrono::milliseconds discovery_limit) {
  auto context = std::make_shared<Context>();
  context->level = level;
  context->allow_cpu = allow_cpu;
  context->system = device::collect_system_info();
  if (auto inventory = run_bounded([] { return device::discover_gpus(); }, discovery_limit)) {
    context->inventory = std::move(*inventory);
  } else {
    context->discovery_timed_out = true;
    context->inventory.driver.cuda_error = "the driver did not answer within the time limit";
  }
  context->libraries = device::probe_runtime_libraries();
  return context;
}

std::vector<Check> verify_checks(const Context& context) {
  std::vector<Check> all;
  auto append = [&all](std::vector<Check> more) {
    for (auto& check : more) all.push_back(std::move(check));
  };
  append(system_checks());
  append(driver_checks());
  append(container_checks());
  append(gpu_checks(context));
  append(library_checks());
  append(functional_checks(context));
  append(performance_checks(context));
  return all;
}

}  // namespace gputrain::checks
