#pragma once
// The checks `gputrain verify` runs, and the facts they run on.

#include <chrono>
#include <memory>
#include <vector>

#include "gputrain/checks/check.hpp"

namespace gputrain::checks {

/// Gathers system facts, GPUs (bounded by `discovery_limit`: a hung driver becomes a timeout)
/// and the CUDA libraries in use.
std::shared_ptr<Context> gather_context(Level level, bool allow_cpu, std::chrono::milliseconds discovery_limit = std::chrono::seconds(8));

/// The checks for this context, in report order: system, driver, container, gpu, libraries,
/// functional, performance. Per-GPU checks are numbered by CUDA ordinal ("gpu.0.memory").
std::vector<Check> verify_checks(const Context& context);

}  // namespace gputrain::checks
