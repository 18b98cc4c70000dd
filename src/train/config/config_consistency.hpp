#pragma once
// What no key shows on its own: settings that contradict each other. Private to the train area.

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Checks that need several keys at once (checkpoint.best_metric against data.task, a data.path
/// with synthetic data, train.class_weights against data.classes, ...); throws UsageError naming
/// the keys and the change that reconciles them.
void check_consistency(const Config& config);

}  // namespace gputrain::train
