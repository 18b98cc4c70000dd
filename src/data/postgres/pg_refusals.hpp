#pragma once
// What it means when a PostgreSQL server, or a connection pooler in front of it (PgBouncer),
// refuses a connection or a statement, told from its SQLSTATE where a server answered (its words
// are in its own language), else from libpq's and the pooler's words: the error a user can act
// on, naming the setting to change. Pure functions of the text, so every case is tested without
// a server.

#include <string>
#include <vector>

namespace gputrain::data::postgres {

/// A connection that failed: libpq's message and who it was for (the DSN with its password
/// masked, or empty when data.dsn was, and the PG* variables alone said where).
struct ConnectFailure {
  std::string message, host, port, user, dsn_shown;
  std::vector<std::string> tried;  ///< host:port of each server data.dsn lists (host=a,b), where more than one
  std::string state;               ///< the SQLSTATE a server refused it with, where one answered (any language)
  std::string options, database;   ///< data.dsn's `options` (-c name=value ...) and the database asked for
};

/// Whether libpq's `message` holds a server's reply ("... failed: FATAL:  ..."): a severity and
/// two spaces, in whatever language the server speaks, which libpq's own failures never have.
bool server_answered(const std::string& message);
/// The SQLSTATE in a message libpq wrote with verbose errors ("FATAL:  28P01: ..."), or "".
std::string sqlstate_of_verbose(const std::string& message);

/// The host:port of each server a connection string lists, as libpq tries them: `hosts` and `ports`
/// are its comma lists (one port serves every host; an empty one is `default_port`).
std::vector<std::string> servers_listed(const std::string& hosts, const std::string& ports, const std::string& default_port);

/// Throws the error `failure` means: UsageError for data.dsn to fix (not a connection string, a
/// refused login, SSL settings, a setting or database a pooler does not know), EnvironmentError
/// for a server that cannot be reached or takes no more connections now.
[[noreturn]] void throw_connect_error(const ConnectFailure& failure);

/// A statement a connection pooler refused (its errors come as SQLSTATE 08P01 with words of its
/// own): throws what that means for `what` (BEGIN, data.query) at `where`; returns otherwise.
void throw_if_pooler_refused(const std::string& message, const std::string& where, const std::string& what);

}  // namespace gputrain::data::postgres
