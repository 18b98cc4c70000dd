#pragma once
// SIGINT/SIGTERM/SIGHUP handling for long runs: the first signal only sets a flag that the training
// loop reads at a step boundary (so it can checkpoint and exit 130); a second one exits at once,
// unless it comes within 100 ms of the first: then it is the same event delivered twice (GNU
// timeout signals the command and its process group), and counts once.

namespace gputrain::core {

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session; left
/// ignored under nohup), and ignores SIGPIPE, so a console that is gone cannot end the run before
/// its checkpoint (idempotent).
void install_stop_handlers();

/// True once a stop was requested by a signal or request_stop().
bool stop_requested() noexcept;

/// Asks the running loop to stop at its next step boundary, as the first signal does.
void request_stop() noexcept;

/// Forgets a request (for a process that trains several times, e.g. tests).
void clear_stop_request() noexcept;

}  // namespace gputrain::core
