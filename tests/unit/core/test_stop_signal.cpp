// The stop handlers run in a forked child: a real second signal ends the process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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

// A signal can land between a failed call and the interrupted code's read of errno. With the
// console gone the handler's own write fails (EPIPE, SIGPIPE being ignored): errno must come
// back as the interrupted code left it.
TEST(StopSignal, TheHandlerLeavesErrnoAsItFoundIt) {
  const pid_t child = ::fork();
  if (child == 0) {
    int pipe_ends[2];
    if (::pipe(pipe_ends) != 0) ::_exit(4);
    ::close(pipe_ends[0]);  // no reader: the handler's announcement fails with EPIPE
    ::dup2(pipe_ends[1], STDERR_FILENO);
    install_stop_handlers();
    errno = ENOTTY;
    std::raise(SIGINT);
    const int after = errno;
    ::_exit(!stop_requested() ? 2 : after == ENOTTY ? 0 : 3);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no stop was requested; 3: the handler changed errno";
}
