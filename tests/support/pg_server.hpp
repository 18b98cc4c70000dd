#pragma once
// The PostgreSQL server tests/postgres/pg_server.py started for the `postgres` tests (a ctest
// fixture): where it listens, and SQL run on it with libpq. A test skips, saying why, when the
// machine has no server binaries.

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

namespace gputrain::test_support {

class PgServer {
 public:
  PgServer() {
    const std::string dir = GPUTRAIN_PG_DIR;
    std::ifstream absent(dir + "/absent");
    if (absent) std::getline(absent, absent_);
    std::ifstream env(dir + "/server.env");
    for (std::string line; std::getline(env, line);) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) values_[line.substr(0, eq)] = line.substr(eq + 1);
    }
    if (absent_.empty() && values_.empty()) absent_ = "the server fixture did not run (ctest -L postgres starts it)";
  }
  /// Why there is no server ("" when there is one).
  const std::string& absent() const { return absent_; }
  /// The superuser over the Unix socket (trusted).
  std::string dsn(const std::string& database = "postgres") const {
    return "host=" + values_.at("socket_dir") + " port=" + values_.at("port") + " user=gputrain dbname=" + database;
  }
  /// A password login over TCP.
  std::string tcp_dsn(const std::string& password) const {
    return "postgresql://trainer:" + password + "@127.0.0.1:" + values_.at("port") + "/postgres";
  }
  const std::string& password() const { return values_.at("password"); }
  const std::string& port() const { return values_.at("port"); }

  /// Runs `sql` (statements separated by ';') in `database`, sent as UTF-8; fails the test with
  /// the server's message.
  void exec(const std::string& sql, const std::string& database = "postgres") const {
    PGconn* conn = PQconnectdb((dsn(database) + " client_encoding=UTF8").c_str());
    PGresult* result = PQexec(conn, sql.c_str());
    const auto status = PQresultStatus(result);
    const std::string error = PQerrorMessage(conn);
    PQclear(result);
    PQfinish(conn);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) throw std::runtime_error("SQL failed: " + error + sql);
  }
  /// The first value of `sql`'s first row.
  std::string value(const std::string& sql) const {
    PGconn* conn = PQconnectdb(dsn().c_str());
    PGresult* result = PQexec(conn, sql.c_str());
    std::string out = PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) > 0 ? PQgetvalue(result, 0, 0) : "";
    PQclear(result);
    PQfinish(conn);
    return out;
  }

  /// How many queries LIKE `pattern` still run on the server after up to 5 s of waiting for
  /// them to end (a cancelled query ends a moment after its client gives up).
  std::string active_after_waiting(const std::string& pattern) const {
    std::string running = "1";
    for (int i = 0; i < 50 && running != "0"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      running = value("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '" + pattern + "' AND state = 'active'");
    }
    return running;
  }

 private:
  std::string absent_;
  std::map<std::string, std::string> values_;
};

}  // namespace gputrain::test_support
