// What a refused connection or statement means, from the words libpq, the server and PgBouncer
// send (copied from real ones): each case's exit code and the setting its fix names, and a
// message of no known kind left to the caller. The real server and pooler: check_pooler.py.
#include <gtest/gtest.h>

#include <string>

#include "data/postgres/pg_refusals.hpp"
#include "gputrain/core/error.hpp"

using namespace gputrain;
using namespace gputrain::data::postgres;

namespace {

ConnectFailure failure_of(const std::string& message, const std::string& host, const std::string& port, const std::string& user,
                          const std::string& dsn_shown) {
  ConnectFailure f;
  f.message = message;
  f.host = host;
  f.port = port;
  f.user = user;
  f.dsn_shown = dsn_shown;
  return f;
}

Error error_of(const ConnectFailure& failure) {
  try {
    throw_connect_error(failure);
  } catch (const Error& e) {
    return e;
  }
  return Error("nothing thrown", "");
}

// The error throw_connect_error throws for libpq's `message` at 127.0.0.1:6432, where the server
// answered with `state` (its SQLSTATE, "" for none) to data.dsn's `options`.
Error connect_error(const std::string& message, const std::string& state = "", const std::string& options = "") {
  auto f = failure_of("connection to server at \"127.0.0.1\", port 6432 failed: " + message, "127.0.0.1", "6432", "trainer",
                      "host=127.0.0.1 port=6432 password=**** dbname=db");
  f.state = state;
  f.options = options;
  f.database = "db";
  return error_of(f);
}

void expect_says(const Error& e, ExitCode code, const std::string& message_words, const std::string& fix_words) {
  EXPECT_EQ(e.exit_code(), code) << e.what();
  EXPECT_NE(std::string(e.what()).find(message_words), std::string::npos) << e.what();
  EXPECT_NE(e.remedy().find(fix_words), std::string::npos) << e.remedy();
  EXPECT_EQ(e.remedy().find("start the server"), std::string::npos) << e.remedy();
}

}  // namespace

TEST(PgRefusals, APoolersRefusalsNameItsSettingsNotAServerToStart) {
  expect_says(connect_error("FATAL:  unsupported startup parameter: options"), ExitCode::usage, "refused data.dsn's 'options' setting",
              "ignore_startup_parameters");
  expect_says(connect_error("FATAL:  no such database: analytics"), ExitCode::usage, "serves no database 'analytics'", "[databases]");
  expect_says(connect_error("FATAL:  no more connections allowed (max_client_conn)"), ExitCode::environment, "takes no more connections",
              "max_client_conn");
}

TEST(PgRefusals, AFullServerIsToldFromOneThatIsDown) {
  for (const auto* message : {"FATAL:  sorry, too many clients already", "FATAL:  too many connections for role \"trainer\"",
                              "FATAL:  remaining connection slots are reserved for non-replication superuser connections"})
    expect_says(connect_error(message), ExitCode::environment, "is up, but takes no more connections", "max_connections");
  const auto starting = connect_error("FATAL:  the database system is starting up");
  EXPECT_EQ(starting.exit_code(), ExitCode::environment);
  EXPECT_NE(starting.remedy().find("run again once it is up"), std::string::npos) << starting.remedy();
  const auto down = connect_error("Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?");
  EXPECT_EQ(down.exit_code(), ExitCode::environment);
  EXPECT_NE(down.remedy().find("start the server"), std::string::npos) << down.remedy();
  const auto waited = connect_error("timeout expired");
  EXPECT_NE(waited.remedy().find("PgBouncer"), std::string::npos) << waited.remedy();
}

TEST(PgRefusals, TheLoginAndTheStringAreStillTheirOwnCases) {
  expect_says(connect_error("FATAL:  password authentication failed for user \"trainer\""), ExitCode::usage, "refused the login",
              "~/.pgpass");
  expect_says(connect_error("FATAL:  database \"nosuch\" does not exist"), ExitCode::usage, "refused the login", "database");
  EXPECT_EQ(connect_error("invalid connection option \"hots\"").exit_code(), ExitCode::usage);
  const std::string no_dsn = error_of(failure_of("timeout expired", "db", "5432", "me", "")).what();
  EXPECT_NE(no_dsn.find("empty: PG* variables"), std::string::npos) << no_dsn;
}

// host=a,b (a primary and its standbys): libpq tries each in turn, and the error names them all.
TEST(PgRefusals, EveryServerADsnListsIsNamedWithItsOwnCheck) {
  EXPECT_EQ(servers_listed("a,b", "5433,5434", "5432"), (std::vector<std::string>{"a:5433", "b:5434"}));
  EXPECT_EQ(servers_listed("a,b", "6000", "5432"), (std::vector<std::string>{"a:6000", "b:6000"}));  // one port for all
  EXPECT_EQ(servers_listed("a,b", "", "5432"), (std::vector<std::string>{"a:5432", "b:5432"}));
  EXPECT_EQ(servers_listed("a,b", "5433,", "5432"), (std::vector<std::string>{"a:5433", "b:5432"}));
  auto both =
      failure_of("connection to server at \"a\", port 5433 failed: Connection refused", "b", "5434", "me", "host=a,b port=5433,5434");
  both.tried = {"a:5433", "b:5434"};
  const auto e = error_of(both);
  EXPECT_NE(std::string(e.what()).find("for user 'me' at a:5433 or b:5434 (data.dsn"), std::string::npos) << e.what();
  EXPECT_NE(e.remedy().find("`pg_isready -h a -p 5433`, `pg_isready -h b -p 5434` say whether they accept"), std::string::npos)
      << e.remedy();
}

TEST(PgRefusals, APoolersStatementRefusalsAreNamedAndOthersLeftToTheCaller) {
  try {
    throw_if_pooler_refused("transaction blocks not allowed in statement pooling mode", "me@db:6432/x", "BEGIN");
    ADD_FAILURE() << "statement pooling not named";
  } catch (const Error& e) {
    expect_says(e, ExitCode::usage, "pool_mode = statement", "transaction or session mode");
  }
  try {
    throw_if_pooler_refused("query_wait_timeout", "me@db:6432/x", "data.query");
    ADD_FAILURE() << "query_wait_timeout not named";
  } catch (const Error& e) {
    expect_says(e, ExitCode::environment, "no free server connection for data.query", "default_pool_size");
  }
  EXPECT_NO_THROW(throw_if_pooler_refused("server conn crashed?", "me@db:6432/x", "data.query"));
  EXPECT_NO_THROW(throw_if_pooler_refused("invalid message format", "me@db:5432/x", "data.query"));
}

TEST(PgRefusals, LibpqsOwnRefusalsOfTheDsnsSettingsNameThem) {
  expect_says(connect_error("definition of service \"nosuch\" not found"), ExitCode::usage, "names a connection service",
              "~/.pg_service.conf");
  expect_says(connect_error("syntax error in service file \"/home/me/.pg_service.conf\", line 3"), ExitCode::usage,
              "names a connection service", "[name] section");
  expect_says(connect_error("server is not in hot standby mode"), ExitCode::environment, "target_session_attrs",
              "target_session_attrs=any");
  expect_says(connect_error("session is read-only"), ExitCode::environment, "target_session_attrs", "host=a,b");
  expect_says(connect_error("GSSAPI encryption required but was impossible (possibly no credential cache, no server support, or "
                            "using a local socket)"),
              ExitCode::usage, "GSSAPI", "gssencmode");
  const auto no_host = error_of(failure_of("could not connect", "", "", "", "service=x"));  // a service libpq could not read
  EXPECT_EQ(std::string(no_host.what()).find(" at :"), std::string::npos) << no_host.what();
  EXPECT_NE(no_host.remedy().find("`pg_isready`"), std::string::npos) << no_host.remedy();
}

// A server answers in its own language (lc_messages: a German one's "Passwort-Authentifizierung
// ... fehlgeschlagen"); its SQLSTATE, which libpq's verbose errors carry, reads the same in all.
TEST(PgRefusals, AServersRefusalIsToldByItsCodeInAnyLanguage) {
  EXPECT_TRUE(server_answered("connection to server at \"h\", port 5432 failed: FATAL:  Datenbank \u00bbx\u00ab existiert nicht"));
  EXPECT_FALSE(server_answered("connection to server at \"h\", port 1 failed: Connection refused\n\tIs the server running?"));
  EXPECT_FALSE(server_answered("fe_sendauth: no password supplied"));
  EXPECT_EQ(sqlstate_of_verbose("... failed: FATAL:  28P01: Passwort-Authentifizierung f\u00fcr Benutzer\nLOCATION:  auth_failed"),
            "28P01");
  EXPECT_EQ(sqlstate_of_verbose("... failed: FATAL:  Passwort-Authentifizierung"), "");
  EXPECT_EQ(sqlstate_of_verbose("... failed: Connection refused"), "");

  expect_says(connect_error("FATAL:  Passwort-Authentifizierung f\u00fcr Benutzer \u00bbtrainer\u00ab fehlgeschlagen", "28P01"),
              ExitCode::usage, "refused the login", "~/.pgpass");
  expect_says(connect_error("FATAL:  Datenbank \u00bbnodb\u00ab existiert nicht", "3D000"), ExitCode::usage, "refused the login",
              "database");
  expect_says(connect_error("FATAL:  zu viele Verbindungen f\u00fcr Rolle \u00bbtrainer\u00ab", "53300"), ExitCode::environment,
              "is up, but takes no more connections", "CONNECTION LIMIT");
  expect_says(connect_error("FATAL:  das Datenbanksystem startet", "57P03"), ExitCode::environment, "takes no connections now",
              "pg_isready -h 127.0.0.1 -p 6432");
  expect_says(connect_error("FATAL:  keine Berechtigung f\u00fcr Datenbank \u00bbdb\u00ab", "42501"), ExitCode::usage,
              "to database 'db', which it may not connect to", "GRANT CONNECT ON DATABASE db TO trainer");
  expect_says(connect_error("FATAL:  ung\u00fcltiger Wert f\u00fcr Parameter \u00bbstatement_timeout\u00ab: \u00bbabc\u00ab", "22023",
                            "-c statement_timeout=abc -c work_mem=64MB"),
              ExitCode::usage, "refused data.dsn's options setting 'statement_timeout'", "SHOW statement_timeout");
  expect_says(connect_error("FATAL:  unrecognized configuration parameter \"no_such\"", "42704", "--no_such=1"), ExitCode::usage,
              "options setting 'no_such'", "leave out no_such");
  expect_says(connect_error("FATAL:  etwas anderes", "XX000"), ExitCode::environment, "refused the connection", "its log says more");
}
