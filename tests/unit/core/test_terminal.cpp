#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
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

// The resize handler chains to the one before it, which may set errno (as a logging library's
// may): errno must come back as the interrupted code left it. In a child, so the handlers stay its own.
TEST(Terminal, TheResizeHandlerLeavesErrnoAsItFoundIt) {
  const pid_t child = ::fork();
  if (child == 0) {
    struct sigaction before {};
    before.sa_handler = [](int) { errno = EIO; };
    sigemptyset(&before.sa_mask);
    sigaction(SIGWINCH, &before, nullptr);
    const auto resizes = gputrain::core::terminal_resizes();  // installs ours over it
    errno = ENOTTY;
    std::raise(SIGWINCH);
    const int after = errno;
    ::_exit(gputrain::core::terminal_resizes() != resizes + 1 ? 2 : after == ENOTTY ? 0 : 3);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the resize was not counted; 3: errno changed";
}
