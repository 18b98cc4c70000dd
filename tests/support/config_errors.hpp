#pragma once
// What the config tests load and what they expect a user to be told: a config from tests/data/configs,
// and the error of one that does not load, as the CLI prints it.

#include <gtest/gtest.h>

#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

namespace gputrain::test_support {

/// tests/data/configs/`name`.
inline std::string config_fixture(const std::string& name) { return test_data_dir() + "/configs/" + name; }

/// The UsageError message and fix of loading `sources`, as the CLI prints them; a test failure when
/// it loads, exits with another code or has no fix.
inline std::string config_error(const train::ConfigSources& sources) {
  const auto e = thrown_usage_error([&] { train::load_config(sources); });
  if (!e) return "";
  EXPECT_EQ(e->exit_code(), ExitCode::usage);
  EXPECT_FALSE(e->remedy().empty());
  return std::string(e->what()) + "\n  fix: " + e->remedy();
}

}  // namespace gputrain::test_support
