#pragma once
// A libpq connection for reading training data: opened with a connect timeout, its failures
// turned into errors that name host, port and user (never the password) with the fix, and SQL
// errors shown with the server's message and where in the query it points.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct pg_conn;
struct pg_result;

namespace gputrain::data::postgres {

class TextRecoder;

/// A column of a query's result: its name and type OID.
struct Column {
  std::string name;
  std::uint32_t type = 0;
};

class Connection {
 public:
  /// Connects to `dsn` (a libpq URI or key=value string; PG* variables and ~/.pgpass apply).
  /// Throws EnvironmentError (exit 3) when the server cannot be reached, UsageError (exit 2) when
  /// it refuses the login; both name host, port and user and say what to check.
  explicit Connection(const std::string& dsn);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Runs a statement that returns no rows (BEGIN, SET); throws UsageError with the server's message.
  void run(const std::string& sql);
  /// The columns `query` returns (described by the server, no rows read); throws UsageError with
  /// the server's message and a caret under the place it names (`what`: "data.query").
  std::vector<Column> columns_of(const std::string& query, const std::string& what);
  /// A type's name as SQL writes it ("timestamp with time zone"), for errors.
  std::string type_name(std::uint32_t type);
  /// `name` as SQL must write it (the server's quote_ident: in double quotes when it is not a plain
  /// lower-case name, or is a reserved word), for the fixes errors give.
  std::string quoted_identifier(const std::string& name);
  /// The first value of `sql`'s first row, or nullopt when the statement fails (or is more than
  /// one: it may hold a user's query). In a transaction a failure aborts it: run such probes
  /// inside a savepoint.
  std::optional<std::string> try_value(const std::string& sql);

  /// Streams `COPY (query) TO STDOUT (FORMAT binary)`, sent as one statement: each piece of data goes to `piece`, and
  /// `tick` is called about 5 times a second while it waits (a stop request thrown from it
  /// cancels the query on the server, then propagates). A server that dies mid-stream, or an
  /// error it sends, throws Error (exit 1) or UsageError (an error in the query).
  void copy_out(const std::string& query, const std::string& what, const std::function<void(const char*, std::size_t)>& piece,
                const std::function<void()>& tick);

  /// Gives each statement from now on `seconds` to be answered (0: no limit); past that it throws
  /// EnvironmentError, after which the connection is to be dropped. For a further COPY stream's
  /// set-up, which a pooler with no free server connection would queue for minutes.
  void answer_within(double seconds) { answer_within_ = seconds; }

  /// "user@host:port/db", for the run's data line and errors.
  std::string where() const;
  /// The session's client_encoding ("UTF8" unless data.dsn names another): the encoding of the
  /// text fields copy_out's rows hold.
  const std::string& client_encoding() const { return client_encoding_; }

 private:
  [[noreturn]] void fail_to_connect(const std::string& dsn);
  void fail_on_encoding(const std::string& state, const std::string& message, const std::string& what);
  bool ran_into_statement_timeout(const std::string& message);
  // SQL in the session's encoding (`what` names it in the error when a character has none there),
  // and the server's text in UTF-8 (as it came when it does not convert).
  std::string sent(const std::string& sql, const std::string& what) const;
  std::string received(const char* text) const;
  // The result of the statement just sent (`sent`: PQsend... took it), waited for in steps: a stop
  // request cancels it, and a long wait for another session's lock is said (pg_wait.cpp).
  pg_result* result_of(bool sent, const std::string& what);
  void note_lock_wait(double waited_seconds, const std::string& what, bool& said);
  // Throws the server's error of `result`: a caret under its position in `query` (which starts
  // `offset` characters into the statement sent).
  [[noreturn]] void fail_query(pg_result* result, std::size_t offset, const std::string& query, const std::string& what);
  void cancel();
  pg_conn* conn_ = nullptr;
  std::string dsn_, dsn_masked_;  // dsn_ for the probe that asks who holds a lock
  bool says_who_blocks_ = true;
  double answer_within_ = 0;
  std::chrono::steady_clock::time_point statement_sent_;  // the last statement's, for how long it ran
  std::string client_encoding_ = "UTF8";
  std::unique_ptr<TextRecoder> to_session_, from_session_;
};

}  // namespace gputrain::data::postgres
