#include "pg_connection.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "dsn.hpp"
#include "gputrain/core/error.hpp"
#include "pg_refusals.hpp"
#include "pg_split.hpp"
#include "pg_text.hpp"

namespace gputrain::data::postgres {
namespace {

std::string trimmed(const char* text) {
  std::string s = text ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Our defaults first: the DSN's own settings, expanded from dbname, override them. Keepalives
// notice a server that vanished mid-read instead of waiting on it for ever; UTF-8 text both ways
// whatever the database's encoding (a LATIN1 one's 'café' would come as bytes no JSON takes).
constexpr const char* kKeys[] = {"connect_timeout",  "application_name", "keepalives_idle", "keepalives_interval",
                                 "keepalives_count", "client_encoding",  "dbname",          nullptr};
std::array<const char*, 8> values_for(const std::string& dsn) { return {"10", "gputrain", "30", "10", "3", "UTF8", dsn.c_str(), nullptr}; }

// The SQLSTATE a server refused a connection with (28P01, 3D000, 53300, ...): its words come in
// its own language (lc_messages), the code in none. libpq puts the code in the message with
// verbose errors, which only a connection started step by step can ask for before it logs in.
std::string refused_connection_state(const std::string& dsn, double seconds) {
  const auto values = values_for(dsn);
  const std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectStartParams(kKeys, values.data(), /*expand_dbname=*/1), &PQfinish);
  if (!conn) return "";
  PQsetErrorVerbosity(conn.get(), PQERRORS_VERBOSE);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (auto step = PGRES_POLLING_WRITING; step != PGRES_POLLING_OK && step != PGRES_POLLING_FAILED;) {
    if (std::chrono::steady_clock::now() > deadline) return "";
    pollfd fd{PQsocket(conn.get()), static_cast<short>(step == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
    ::poll(&fd, 1, 200);
    step = PQconnectPoll(conn.get());
  }
  return sqlstate_of_verbose(trimmed(PQerrorMessage(conn.get())));
}

}  // namespace

Connection::Connection(const std::string& dsn) : dsn_(dsn), dsn_masked_(mask_password(dsn)) {
  const auto values = values_for(dsn);
  conn_ = PQconnectdbParams(kKeys, values.data(), /*expand_dbname=*/1);
  if (!conn_) throw Error("libpq could not allocate a connection", "", ExitCode::environment);
  if (PQstatus(conn_) != CONNECTION_OK) fail_to_connect(dsn);
  // A client_encoding from data.dsn other than UTF-8: the text sent and read is converted here.
  client_encoding_ = trimmed(PQparameterStatus(conn_, "client_encoding"));
  if (client_encoding_.empty()) client_encoding_ = "UTF8";  // a pooler that does not report it: what we asked for
  try {
    to_session_ = std::make_unique<TextRecoder>("UTF8", client_encoding_);
    from_session_ = std::make_unique<TextRecoder>(client_encoding_, "UTF8");
  } catch (...) {
    PQfinish(conn_);
    throw;
  }
}

void Connection::fail_to_connect(const std::string& dsn) {
  ConnectFailure failure;
  failure.message = trimmed(PQerrorMessage(conn_));
  failure.host = trimmed(PQhost(conn_));
  failure.port = trimmed(PQport(conn_));
  failure.user = trimmed(PQuser(conn_));
  failure.database = trimmed(PQdb(conn_));
  failure.dsn_shown = dsn.empty() ? "" : dsn_masked_;
  // host=a,b: libpq tried each, and PQhost names the last; the error names them all.
  std::string hosts, addresses, ports;
  if (const std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption*)> options(PQconninfo(conn_), PQconninfoFree); options)
    for (auto* option = options.get(); option->keyword; ++option) {
      if (!option->val) continue;
      if (std::strcmp(option->keyword, "host") == 0) hosts = option->val;
      if (std::strcmp(option->keyword, "hostaddr") == 0) addresses = option->val;
      if (std::strcmp(option->keyword, "port") == 0) ports = option->val;
      if (std::strcmp(option->keyword, "options") == 0) failure.options = option->val;
    }
  const auto listed = servers_listed(hosts.empty() ? addresses : hosts, ports, failure.port);
  if (listed.size() > 1) failure.tried = listed;
  PQfinish(conn_);
  conn_ = nullptr;
  if (server_answered(failure.message)) failure.state = refused_connection_state(dsn, 10);
  throw_connect_error(failure);
}

Connection::~Connection() {
  if (conn_) PQfinish(conn_);
}

std::string Connection::where() const {
  return trimmed(PQuser(conn_)) + "@" + trimmed(PQhost(conn_)) + ":" + trimmed(PQport(conn_)) + "/" + trimmed(PQdb(conn_));
}

void Connection::fail_query(pg_result* result, std::size_t offset, const std::string& query, const std::string& what) {
  std::string message = received(trimmed(PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY)).c_str());
  if (message.empty()) message = received(trimmed(PQerrorMessage(conn_)).c_str());
  const std::string hint = received(trimmed(PQresultErrorField(result, PG_DIAG_MESSAGE_HINT)).c_str());
  const std::string detail = received(trimmed(PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL)).c_str());
  const std::string state = trimmed(PQresultErrorField(result, PG_DIAG_SQLSTATE));
  // The fields live in `result`: each is copied before it goes.
  const char* position_field = PQresultErrorField(result, PG_DIAG_STATEMENT_POSITION);
  const std::string position = position_field ? position_field : "";
  PQclear(result);
  if (state == "57014" && ran_into_statement_timeout(message))  // from the role's, database's or data.dsn's setting
    throw Error("the PostgreSQL server at " + where() + " ended " + what + " at its statement_timeout: " + message,
                "raise it for gputrain's connection: add options='-c statement_timeout=0' to data.dsn (or ALTER ROLE " +
                    trimmed(PQuser(conn_)) + " SET statement_timeout = 0)");
  // A standby (a read replica) cancels a read whose snapshot holds rows the primary's changes,
  // as it replays them, remove; any transaction rollback (40) is worth a second try.
  if (state.rfind("40", 0) == 0) {
    const bool standby = trimmed(PQparameterStatus(conn_, "in_hot_standby")) == "on" ||  // PostgreSQL 14 on says so
                         message.find("conflict with recovery") != std::string::npos;
    throw Error("the PostgreSQL server at " + where() + (standby ? ", a standby," : "") + " cancelled " + what + "'s read: " + message +
                    (detail.empty() ? "" : " (" + detail + ")"),
                standby ? "nothing was trained; run again, and for reads this long set hot_standby_feedback = on on the standby "
                          "(or raise its max_standby_streaming_delay), or point data.dsn at the primary"
                        : "nothing was trained; run again");
  }
  if (state == "57014")  // query_canceled, not at a timeout: pg_cancel_backend(), from a person or a tool
    throw Error("the PostgreSQL server at " + where() + " cancelled " + what + "'s read at another session's request: " + message,
                "nothing was trained; run again, and ask who cancelled it: the server's log names the session, and "
                "pg_stat_activity shows what watches long queries");
  // The server's own trouble, not the query's: an administrator's or a crash's shutdown (57),
  // a connection fault (08), resources (53), the system (58), an internal error (XX).
  if (state == "08P01") throw_if_pooler_refused(message, where(), what);
  for (const char* server_side : {"57", "08", "53", "58", "XX"})
    if (state.rfind(server_side, 0) == 0)
      throw Error(
          "the PostgreSQL server at " + where() + " stopped while sending " + what + "'s rows: " + message + " (SQLSTATE " + state + ")",
          "nothing was trained; check the server's log, and run again once it is back");
  fail_on_encoding(state, message, what);
  // The place the server points at, in the query as the user wrote it, with a caret under it.
  std::string caret;
  if (!position.empty() && !query.empty()) {
    const auto at = static_cast<std::size_t>(std::atol(position.c_str()));
    if (at > offset && at - offset - 1 < query.size()) {
      const auto index = at - offset - 1;
      const auto line_start = query.rfind('\n', index) == std::string::npos ? 0 : query.rfind('\n', index) + 1;
      const auto line_end = std::min(query.find('\n', index), query.size());
      caret = "\n    " + query.substr(line_start, line_end - line_start) + "\n    " + std::string(index - line_start, ' ') + "^";
    }
  }
  throw UsageError(what + ": PostgreSQL says: " + message + caret,
                   (hint.empty() ? "" : (hint.back() == '.' ? hint.substr(0, hint.size() - 1) : hint) + "; ") + "fix " + what +
                       " (psql runs it as it is: psql '" + dsn_masked_ + "' -c '...')");
}

// A statement cancelled (57014) at the session's statement_timeout, not by another session: the
// server's words say which only in English (lc_messages), so how long it ran against the setting.
bool Connection::ran_into_statement_timeout(const std::string& message) {
  if (message.find("statement timeout") != std::string::npos) return true;
  const auto ran_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - statement_sent_).count();
  PQclear(PQexec(conn_, "ROLLBACK"));  // the cancel aborted the transaction, and any statement in it
  const auto timeout_ms = try_value("SELECT setting FROM pg_settings WHERE name = 'statement_timeout'");
  return timeout_ms && std::atof(timeout_ms->c_str()) > 0 && ran_ms + 1 >= std::atof(timeout_ms->c_str());
}

// Text the session's encoding cannot carry: 22021 from a database of no declared encoding
// (SQL_ASCII) whose bytes are not UTF-8, or 22P05 for a character data.dsn's client_encoding lacks.
void Connection::fail_on_encoding(const std::string& state, const std::string& message, const std::string& what) {
  const std::string server_encoding = trimmed(PQparameterStatus(conn_, "server_encoding"));
  if (state == "22021" && server_encoding == "SQL_ASCII" && client_encoding_ == "UTF8")
    throw UsageError(what + " reads text that is not UTF-8 from database '" + trimmed(PQdb(conn_)) +
                         "', which declares no encoding (SQL_ASCII: its text is stored as the bytes it was written in): "
                         "PostgreSQL says: " +
                         message,
                     "name the encoding that text was written in, in data.dsn: client_encoding=LATIN1 (Western European), "
                     "WIN1252 (Windows' Western European), or another of PostgreSQL's names (LATIN2, WIN1251, SJIS, ...); "
                     "gputrain then reads it as such and converts it to UTF-8");
  if (state == "22P05" || (state == "22021" && client_encoding_ != "UTF8"))
    throw UsageError(
        what + " reads text that client_encoding " + client_encoding_ + " (from data.dsn) cannot carry: PostgreSQL says: " + message,
        server_encoding == "SQL_ASCII"
            ? "name the encoding the database's text was written in as data.dsn's client_encoding"
            : "leave client_encoding out of data.dsn: gputrain reads UTF-8, which holds every character, and the server "
              "converts its " +
                  server_encoding + " text to it");
}

std::string Connection::sent(const std::string& sql, const std::string& what) const {
  auto converted = (*to_session_)(sql);
  if (!converted)
    throw UsageError(what + " holds a character that " + client_encoding_ + " (data.dsn's client_encoding) has not",
                     "write the query without it (a string literal can be written with chr(), or compared in the database's "
                     "own encoding), or leave client_encoding out of data.dsn where the database declares its encoding");
  return std::move(*converted);
}

std::string Connection::received(const char* text) const {
  if (!text) return "";
  auto converted = (*from_session_)(text);
  return converted ? std::move(*converted) : std::string(text);
}

void Connection::run(const std::string& sql) {
  auto* result = result_of(PQsendQuery(conn_, sent(sql, sql).c_str()), sql);
  if (PQresultStatus(result) != PGRES_COMMAND_OK) fail_query(result, 0, "", sql);
  PQclear(result);
}

std::vector<Column> Connection::columns_of(const std::string& query, const std::string& what) {
  auto* prepared = result_of(PQsendPrepare(conn_, "", sent(query, what).c_str(), 0, nullptr), what);
  if (PQresultStatus(prepared) != PGRES_COMMAND_OK) fail_query(prepared, 0, query, what);
  PQclear(prepared);
  auto* described = result_of(PQsendDescribePrepared(conn_, ""), what);
  if (PQresultStatus(described) != PGRES_COMMAND_OK) fail_query(described, 0, query, what);
  std::vector<Column> columns;
  for (int i = 0; i < PQnfields(described); ++i) columns.push_back({received(PQfname(described, i)), PQftype(described, i)});
  PQclear(described);
  return columns;
}

std::string Connection::type_name(std::uint32_t type) {
  const auto text = std::to_string(type);
  const char* values[] = {text.c_str()};
  auto* result =
      result_of(PQsendQueryParams(conn_, "SELECT format_type($1::oid, NULL)", 1, nullptr, values, nullptr, nullptr, 0), "a type's name");
  std::string name =
      PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == 1 ? received(PQgetvalue(result, 0, 0)) : "type " + text;
  PQclear(result);
  return name;
}

std::string Connection::quoted_identifier(const std::string& name) {
  const auto in_session = (*to_session_)(name);
  if (!in_session) return "\"" + name + "\"";
  const char* values[] = {in_session->c_str()};
  auto* result =
      result_of(PQsendQueryParams(conn_, "SELECT quote_ident($1)", 1, nullptr, values, nullptr, nullptr, 0), "a column's quoting");
  std::string quoted = PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == 1 ? received(PQgetvalue(result, 0, 0)) : name;
  PQclear(result);
  return quoted;
}

std::optional<std::string> Connection::try_value(const std::string& sql) {
  // The extended protocol runs one statement only: a query's text cannot smuggle in another.
  const auto in_session = (*to_session_)(sql);
  if (!in_session) return std::nullopt;
  auto* result = result_of(PQsendQueryParams(conn_, in_session->c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0), "a query");
  std::optional<std::string> value;
  if (PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) > 0 && PQnfields(result) > 0)
    value = received(PQgetvalue(result, 0, 0));
  PQclear(result);
  return value;
}

void Connection::copy_out(const std::string& query, const std::string& what, const std::function<void(const char*, std::size_t)>& piece,
                          const std::function<void()>& tick) {
  const std::string prefix = "COPY (";
  // The ')' on a line of its own: a '--' comment at the query's end must not swallow it.
  const auto sql = sent(prefix + without_final_semicolons(query) + "\n) TO STDOUT (FORMAT binary)", what);
  std::uint64_t received = 0;
  const auto lost = [&] {
    return Error("the PostgreSQL server at " + where() + " closed the connection while sending " + what + "'s rows (after " +
                     std::to_string(received) + " bytes): " + trimmed(PQerrorMessage(conn_)),
                 "nothing was trained; check the server's log, and run again once it is back");
  };
  // A stop request (Ctrl-C) thrown from `tick` cancels the query on the server first.
  auto last_tick = std::chrono::steady_clock::now();
  const auto ticked = [&](bool now) {
    if (!now && std::chrono::steady_clock::now() - last_tick < std::chrono::milliseconds(200)) return;
    last_tick = std::chrono::steady_clock::now();
    try {
      tick();
    } catch (...) {
      cancel();
      throw;
    }
  };
  auto last_data = std::chrono::steady_clock::now();  // a COPY that waits for a lock sends nothing
  bool said = false;
  const auto wait = [&] {
    ticked(true);
    pollfd fd{PQsocket(conn_), POLLIN, 0};
    ::poll(&fd, 1, 200);
    if (!PQconsumeInput(conn_)) throw lost();
    note_lock_wait(std::chrono::duration<double>(std::chrono::steady_clock::now() - last_data).count(), what, said);
  };
  // One statement only (the extended protocol): "...; COMMIT; DROP ..." in data.query is refused.
  statement_sent_ = std::chrono::steady_clock::now();
  if (!PQsendQueryParams(conn_, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) throw lost();
  for (;;) {  // until the server starts the COPY, or refuses the query
    while (PQisBusy(conn_)) wait();
    auto* result = PQgetResult(conn_);
    if (!result) throw lost();
    if (PQresultStatus(result) == PGRES_COPY_OUT) {
      PQclear(result);
      break;
    }
    fail_query(result, prefix.size(), query, what);
  }
  for (;;) {
    char* buffer = nullptr;
    const int n = PQgetCopyData(conn_, &buffer, /*async=*/1);
    if (n > 0) {
      const std::unique_ptr<char, decltype(&PQfreemem)> owned(buffer, &PQfreemem);  // freed if `piece` throws too
      received += static_cast<std::uint64_t>(n);
      last_data = std::chrono::steady_clock::now();
      piece(buffer, static_cast<std::size_t>(n));
      ticked(false);
    } else if (n == 0) {
      wait();
    } else if (n == -1) {
      break;
    } else {
      throw lost();
    }
  }
  // The COPY's own end: an error the server met part-way (a division by zero in row 90,000) comes here.
  while (auto* result = PQgetResult(conn_)) {
    if (PQresultStatus(result) != PGRES_COMMAND_OK) {
      if (PQstatus(conn_) != CONNECTION_OK) {
        PQclear(result);
        throw lost();
      }
      fail_query(result, prefix.size(), query, what);
    }
    PQclear(result);
  }
}

void Connection::cancel() {
  if (auto* handle = PQgetCancel(conn_)) {
    char error[256];
    PQcancel(handle, error, sizeof error);
    PQfreeCancel(handle);
  }
}

}  // namespace gputrain::data::postgres
