#pragma once
// Reading a query's rows over one COPY stream, or over several when the query is a plain scan of
// one table or of a partitioned table's partitions (pg_split.hpp): each stream on its own connection, all in the first connection's
// snapshot (pg_export_snapshot), each decoded on its own thread, the parts joined in order.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pg_connection.hpp"
#include "pg_rows.hpp"

namespace gputrain::data::postgres {

/// Told the rows and bytes received so far and the planner's estimate; may throw to stop.
using RowProgress = std::function<void(std::int64_t rows, std::int64_t estimated_rows, std::uint64_t bytes)>;

struct ReadRows {
  std::uint64_t fingerprint = 0;  ///< the rows' checksum, in any order: what a resumed run compares
  std::int64_t tuples = 0;        ///< the rows received (decoded or not)
  int streams = 1;                ///< the COPY streams read
};

class CopyStreams {
 public:
  /// `main` is in a REPEATABLE READ transaction; more connections to `dsn` join its snapshot the
  /// first time a query splits. `streams`: the most streams a query is read over (0: auto, as
  /// many as the cores, at most 4, and one per 8 MB of the table at least).
  CopyStreams(Connection& main, std::string dsn, int streams);
  ~CopyStreams();
  CopyStreams(const CopyStreams&) = delete;
  CopyStreams& operator=(const CopyStreams&) = delete;

  /// Reads `query`'s rows into `decoder` (in the query's order: the streams' parts one after
  /// another). Errors are those of one stream: of the first in order that failed; a stop thrown by
  /// `progress` cancels every stream's query on the server.
  ReadRows read(const std::string& query, const std::string& what, RowDecoder& decoder, const RowProgress& progress);

  /// Why a query asked to split (data.streams > 1) was read over one stream, once each.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  // How a query's rows divide: the tables it reads in order (one, or a partitioned table's
  // partitions) with their sizes in blocks, and the streams worth opening (1: it does not split).
  struct Split {
    std::vector<std::string> tables;
    std::vector<std::uint64_t> blocks;
    bool partitions = false;
    int streams = 1;
  };
  // The queries each stream `query` is read over runs in turn (itself alone, or block ranges of
  // its tables), and the planner's estimate of its rows: one EXPLAIN for both.
  std::vector<std::vector<std::string>> split(const std::string& query, const std::string& what, std::int64_t& estimated_rows);
  Split streams_for(const std::string& query, const std::string& what, const std::string& plan);
  // Whether the server plans `query` restricted to a range of blocks (of each table) as a TID range scan of that table.
  bool rewrites_plan_as_range_scans(const std::string& query, const std::string& what, const Split& shape);
  std::vector<std::uint64_t> blocks_of(const std::vector<std::string>& tables);
  // Opens connections until `count` share the main one's snapshot; returns how many do.
  int join_snapshot(int count);
  void say(const std::string& note);

  Connection& main_;
  std::string dsn_;
  int most_;
  bool asked_;  // streams were set, not auto: a query that does not split is noted
  std::string snapshot_;
  std::vector<std::unique_ptr<Connection>> extra_;
  std::vector<std::string> notes_;
};

}  // namespace gputrain::data::postgres
