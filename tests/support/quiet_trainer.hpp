#pragma once
// Trainer options for tests: progress and notes go to a string nobody reads, not the test log;
// or, for tests of what a run says, to a string the test reads.

#include <sstream>
#include <string>
#include <utility>

#include "gputrain/train/trainer.hpp"

namespace gputrain::test_support {

inline train::TrainerOptions quiet_trainer() {
  static std::ostringstream sink;
  train::TrainerOptions options;
  options.console = &sink;
  return options;
}

struct ConsoleRun {
  train::FitResult result;
  std::string console;  ///< what the run printed, as plain lines
};

/// Trains `config` to the end with its console in `lines` mode, captured.
inline ConsoleRun fit_capturing_console(train::Config config) {
  std::ostringstream console;
  auto options = quiet_trainer();
  options.console = &console;
  config.logging.progress = "lines";
  train::Trainer trainer(std::move(config), options);
  auto result = trainer.fit();
  return {std::move(result), console.str()};
}

}  // namespace gputrain::test_support
