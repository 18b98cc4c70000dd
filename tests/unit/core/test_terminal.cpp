#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gputrain/core/terminal.hpp"

using gputrain::core::color_wanted;

namespace {

gputrain::core::EnvLookup environment(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    const auto found = vars.find(name);
    return found == vars.end() ? std::nullopt : std::optional<std::string>(found->second);
  };
}

}  // namespace

TEST(Terminal, ColourOnATerminalOnlyUnlessTheEnvironmentSaysOtherwise) {
  EXPECT_TRUE(color_wanted(true, false, environment({{"TERM", "xterm-256color"}})));
  EXPECT_FALSE(color_wanted(false, false, environment({})));  // a pipe or a file
  EXPECT_FALSE(color_wanted(true, true, environment({})));    // --no-color, or NO_COLOR through its twin
}

TEST(Terminal, ADumbTerminalGetsNoColour) { EXPECT_FALSE(color_wanted(true, false, environment({{"TERM", "dumb"}}))); }

TEST(Terminal, ForceColorAndCliColorForceColourEvenAPipe) {
  EXPECT_TRUE(color_wanted(false, false, environment({{"FORCE_COLOR", "1"}})));
  EXPECT_TRUE(color_wanted(false, false, environment({{"CLICOLOR_FORCE", "1"}, {"TERM", "dumb"}})));
  EXPECT_FALSE(color_wanted(false, false, environment({{"FORCE_COLOR", "0"}})));
  EXPECT_FALSE(color_wanted(false, false, environment({{"FORCE_COLOR", ""}})));
  EXPECT_FALSE(color_wanted(true, true, environment({{"FORCE_COLOR", "1"}}))) << "an explicit --no-color wins";
}
