#pragma once
// The launcher's processes: a rank started with its output on a pipe, mpirun's ranks found and
// signalled, and how a process ended, in words.

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace gputrain::dist {

/// A started process and what it has said so far.
struct Child {
  pid_t pid = -1;
  int fd = -1;    // its stdout and stderr, merged
  int rank = -1;  // -1: mpirun, whose output is tagged per rank
  bool running = true;
  int status = 0;       // from waitpid
  std::string partial;  // an unfinished last line
};

/// fork + exec of `argv` with `env` added, its stdout and stderr on one pipe (Child::fd, read
/// without blocking) and no other of the launcher's descriptors. The child gets its own process
/// group, so a terminal's Ctrl-C reaches the launcher only, which forwards it as it sees fit. A
/// launcher killed outright (SIGKILL from a CI job's timeout, the OOM killer) forwards nothing: the
/// kernel sends the child `death_signal` then, which stops the ranks as a SIGTERM would (a
/// checkpoint, exit 130) instead of leaving them to train on unwatched.
Child spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env, int rank, int death_signal);

/// The processes mpirun started (its children), to signal them without mpirun's own handling,
/// which would kill the job rather than let the ranks checkpoint.
std::vector<pid_t> children_of(pid_t parent);

/// `sig` to every running child: SIGTERM to mpirun's ranks rather than to mpirun; SIGKILL to the
/// whole process group.
void signal_all(const std::vector<Child>& children, bool through_mpirun, int sig);

/// "exit code 3" or "killed by signal 9 (Killed)", from a waitpid status.
std::string describe_status(int status);

/// The exit code to pass on for a waitpid status: the process's own, or 1 when a signal ended it.
int exit_code_of(int status);

/// The executable `name` in the PATH's folders, or "" when there is none.
std::string find_in_path(const std::string& name);

}  // namespace gputrain::dist
