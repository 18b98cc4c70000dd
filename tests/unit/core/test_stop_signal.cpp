// The stop handlers run in a forked child: a real second signal ends the process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "gputrain/core/stop_signal.hpp"

using namespace gputrain::core;

namespace {

// The exit code of a child that installs the handlers, raises SIGINT twice `apart`, then exits 0
// if a stop is requested (it must be), 2 if not.
int exit_code_after_two_signals(std::chrono::milliseconds apart) {
  const pid_t child = ::fork();
  if (child == 0) {
    const int null = ::open("/dev/null", O_WRONLY);  // the handler's messages are not the test's
    ::dup2(null, STDERR_FILENO);
    install_stop_handlers();
    std::raise(SIGINT);
    std::this_thread::sleep_for(apart);
    std::raise(SIGINT);
    ::_exit(stop_requested() ? 0 : 2);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

// GNU timeout signals the command, then its process group: one request, delivered twice.
TEST(StopSignal, ASignalEchoedAtOnceCountsAsOneRequest) {
  EXPECT_EQ(exit_code_after_two_signals(std::chrono::milliseconds(0)), 0) << "the echo ended the run without a checkpoint";
}

TEST(StopSignal, ASecondSignalLaterExitsAtOnceWith130) { EXPECT_EQ(exit_code_after_two_signals(std::chrono::milliseconds(300)), 130); }
