#pragma once
// Trainer options for tests: progress and notes go to a string nobody reads, not the test log.

#include <sstream>

#include "gputrain/train/trainer.hpp"

namespace gputrain::test_support {

inline train::TrainerOptions quiet_trainer() {
  static std::ostringstream sink;
  train::TrainerOptions options;
  options.console = &sink;
  return options;
}

}  // namespace gputrain::test_support
