#include <chrono>

#include "gputrain/data/postgres.hpp"
#include "pg_binary.hpp"
#include "pg_connection.hpp"

namespace gputrain::data {

CopyThroughput raw_copy_throughput(const SourceSpec& spec) {
  postgres::Connection conn(spec.dsn);
  // As the load reads it: a query that writes (COPY takes DELETE ... RETURNING) is refused.
  conn.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  CopyThroughput out;
  postgres::TupleReader counter([](const std::vector<postgres::Field>&) {});
  const auto start = std::chrono::steady_clock::now();
  conn.copy_out(
      spec.query, "data.query",
      [&](const char* data, std::size_t size) {
        out.bytes += size;
        counter.feed(data, size);
      },
      [] {});
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  conn.run("COMMIT");
  out.rows = counter.tuples();
  return out;
}

}  // namespace gputrain::data
