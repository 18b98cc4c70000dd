#pragma once
// The summary `gputrain train` prints when a run ends without an interruption.

#include <string>

#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"

namespace gputrain::train {

/// "done: 200 steps in 0:12, final loss ...", then what ended the run, the data, the ranks, the
/// weights and the run folder, one line each (newline-terminated). `on_gpu`: the run's device is a GPU.
std::string fit_summary(const FitResult& result, const Config& config, bool on_gpu);

}  // namespace gputrain::train
