#pragma once
// Settings the run will not read: a key set away from its default that the chosen optimizer,
// scheduler or model has no use for (momentum with adam, model.dropout with resnet18). A user
// who set one believes it acts; saying so beats a silent no-op.

#include <string>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// One line per such key: "optimizer.momentum is 0.5, but adam does not read it (only sgd does)".
/// Keys at their default say nothing, so a config printed by --print-config stays quiet.
std::vector<std::string> unread_settings(const Config& config);

}  // namespace gputrain::train
