#pragma once
// The human-readable lines that training.log and the console's line mode share.

#include <string>

#include "gputrain/train/metrics.hpp"

namespace gputrain::train {

std::string header_line(const RunInfo& info);
std::string step_line(const StepMetrics& m, std::int64_t total_steps);
std::string epoch_line(const EpochMetrics& m, std::int64_t epochs);
std::string oom_line(const memory::OomEvent& e);

}  // namespace gputrain::train
