// Waiting on the server for a statement's result: in steps of 200 ms, so that a stop request
// (Ctrl-C) cancels it, and a wait of 10 s for a lock that another session holds (an ALTER TABLE,
// a TRUNCATE of a nightly load, a LOCK TABLE) is said with who holds it instead of silence, as is
// a connection pooler's queue; a statement given a time to answer in (answer_within) ends there.
#include <libpq-fe.h>
#include <poll.h>

#include <chrono>
#include <memory>

#include "gputrain/core/error.hpp"
#include "gputrain/core/log.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "pg_connection.hpp"

namespace gputrain::data::postgres {

constexpr double kLockNoteSeconds = 10;

pg_result* Connection::result_of(bool sent, const std::string& what) {
  const auto since = statement_sent_ = std::chrono::steady_clock::now();
  bool said = false;
  while (sent && PQisBusy(conn_)) {
    if (core::stop_requested()) {
      cancel();
      throw Error("interrupted while waiting for the PostgreSQL server at " + where() + " to run " + what +
                      ", before any training step: nothing to resume",
                  "run the same command again to start over", ExitCode::interrupted);
    }
    pollfd fd{PQsocket(conn_), POLLIN, 0};
    ::poll(&fd, 1, 200);
    if (!PQconsumeInput(conn_)) break;  // the result below is the error
    const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
    if (answer_within_ > 0 && waited > answer_within_)
      throw EnvironmentError("the server at " + where() + " did not answer " + what + " within " +
                                 std::to_string(static_cast<int>(answer_within_)) +
                                 " s (a connection pooler with no free server connection queues it)",
                             "a pooler's default_pool_size bounds the connections it opens to the server");
    note_lock_wait(waited, what, said);
  }
  auto* result = PQgetResult(conn_);  // null when the connection failed: callers read PQerrorMessage
  while (auto* extra = PQgetResult(conn_)) PQclear(extra);
  return result;
}

void Connection::note_lock_wait(double waited_seconds, const std::string& what, bool& said) {
  if (said || !says_who_blocks_ || waited_seconds < kLockNoteSeconds) return;
  said = true;
  const auto waited = what + " has waited " + std::to_string(static_cast<int>(waited_seconds)) + " s ";
  std::unique_ptr<Connection> probe;
  try {
    probe = std::make_unique<Connection>(dsn_);
  } catch (const std::exception&) {  // the note is a courtesy: the wait goes on without it
    return;
  }
  probe->says_who_blocks_ = false;
  probe->answer_within(5);  // behind a full pooler it waits as long as the statement it explains
  try {
    const auto holders = probe->try_value(
        "SELECT string_agg(format('session %s (user %s, %s%s)', pid, coalesce(usename, '?'), "
        "coalesce(nullif(application_name, ''), 'no application name'), "
        "CASE WHEN coalesce(query, '') = '' THEN '' ELSE ', ' || state || ': ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 80) END), "
        "'; ') FROM pg_stat_activity WHERE pid = ANY(pg_blocking_pids(" +
        std::to_string(PQbackendPID(conn_)) + "))");
    if (holders && !holders->empty())
      core::log_warn(waited + "for a lock that " + *holders +
                     " holds on its tables; gputrain goes on once that session commits or ends (Ctrl-C stops it)");
  } catch (const EnvironmentError&) {  // the probe's question went unanswered too: queued
    core::log_warn(waited + "for the server at " + where() +
                   " to answer, and so did a second connection's question: a connection pooler (PgBouncer) with no free "
                   "server connection queues both; gputrain goes on once one is free (Ctrl-C stops it; SHOW POOLS on the "
                   "pooler's admin console shows who holds them)");
  } catch (const std::exception&) {  // the note is a courtesy: the wait goes on without it
  }
}

}  // namespace gputrain::data::postgres
