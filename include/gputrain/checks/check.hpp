#pragma once
// A verify check: a small object with an id, a title, a time limit and run() -> Result.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gputrain/device/gpu_info.hpp"
#include "gputrain/device/runtime_libraries.hpp"
#include "gputrain/device/system_info.hpp"

namespace gputrain::checks {

/// Outcome of one check. A warn or fail always carries a remedy.
enum class Status { pass, warn, fail, skip, timeout };

/// "pass", "warn", "fail", "skip", "timeout" (the words the JSON schema uses).
std::string_view to_string(Status status);

/// A measured figure, with the figure expected for this GPU model when known.
struct Figure {
  std::string name;  ///< e.g. "tflops", "bandwidth"
  double value = 0;
  std::string unit;                ///< e.g. "TFLOPS", "GB/s", "GiB"
  std::optional<double> expected;  ///< datasheet or link figure to compare with
};

/// What a check found: a status, a one-line detail, a fix for warn/fail, and figures.
struct Result {
  Status status = Status::pass;
  std::string detail;
  std::string remedy;
  std::vector<Figure> figures;
};

/// Result shorthands.
Result pass(std::string detail, std::vector<Figure> figures = {});
Result warn(std::string detail, std::string remedy, std::vector<Figure> figures = {});
Result fail(std::string detail, std::string remedy, std::vector<Figure> figures = {});
Result skip(std::string detail);

/// quick: the default, about 10 s on a healthy single-GPU box; full: adds a sustained burn and
/// larger transfers.
enum class Level { quick, full };

/// Everything the checks read, gathered once before they run.
struct Context {
  Level level = Level::quick;
  bool allow_cpu = false;  ///< "no GPU" is a warning, not a failure
  device::SystemInfo system;
  device::GpuInventory inventory;
  bool discovery_timed_out = false;  ///< the driver did not answer in time
  std::vector<device::RuntimeLibrary> libraries;
  std::string work_dir = ".";  ///< where free disk space matters
};

/// One check. `run` may throw: the runner turns an exception into a fail with its message.
struct Check {
  std::string id;     ///< stable, dotted: "gpu.0.memory"
  std::string area;   ///< "system", "driver", "container", "gpu", "libraries", "functional", "performance"
  std::string title;  ///< what is checked, for people
  std::chrono::milliseconds time_limit{std::chrono::seconds(5)};
  std::function<Result(const Context&)> run;
  /// What to do when it runs past time_limit; empty: the driver or device may be hung.
  std::string timeout_remedy = {};
};

}  // namespace gputrain::checks
