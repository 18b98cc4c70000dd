#pragma once
// Stop signals for long runs (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2): the first only sets a
// flag that the training loop reads at a step boundary (so it can checkpoint and exit 130); a second one exits at once,
// unless it comes within 100 ms of the first: then it is the same event delivered twice (GNU
// timeout signals the command and its process group), and counts once.

#include <signal.h>

#include <array>
#include <vector>

namespace gputrain::core {

/// The signals that ask a run to stop after its current step, with a checkpoint: Ctrl-C, SIGTERM
/// (kill, docker stop, a scheduler's time limit), SIGHUP (a closed terminal or ssh session), and
/// SIGUSR1/SIGUSR2, which schedulers send ahead of a time limit or preemption (SLURM's
/// `--signal=USR1@120`, Grid Engine's `-notify`). Their default action would kill the run at once.
inline constexpr std::array<int, 5> kStopSignals = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

/// What the first stop signal makes a run write (one write(2), so nothing lands inside it): a line
/// of its own after a blank one. A launcher recognises it in its ranks' output.
inline constexpr char kStopAnnouncement[] =
    "\ngputrain: stopping after the current step and saving a checkpoint (signal again to quit now)\n";

/// Installs the handlers for kStopSignals (SIGHUP, SIGUSR1 and SIGUSR2 stay ignored when they were
/// ignored at start, as under nohup), and ignores SIGPIPE, so a console that is gone cannot end
/// the run before its checkpoint (idempotent).
void install_stop_handlers();

/// A signal's action as it was, for restore_actions().
struct SavedAction {
  int signal;
  struct sigaction action;
};

/// What install_stop_handlers() does, with another handler (a launcher forwards the signals):
/// points kStopSignals at `handler` with sigaction flags `flags`, except SIGHUP, SIGUSR1 and
/// SIGUSR2 when they were ignored at start (nohup ignores SIGHUP so that the run goes on: that
/// choice is kept), and ignores SIGPIPE. Returns each one's action before.
std::vector<SavedAction> catch_stop_signals(void (*handler)(int), int flags);

/// Puts back the actions catch_stop_signals() replaced.
void restore_actions(const std::vector<SavedAction>& saved);

/// True once a stop was requested by a signal or request_stop().
bool stop_requested() noexcept;

/// Asks the running loop to stop at its next step boundary, as the first signal does.
void request_stop() noexcept;

/// Forgets a request (for a process that trains several times, e.g. tests).
void clear_stop_request() noexcept;

}  // namespace gputrain::core
