#pragma once
// Splitting a query's rows across several COPY streams: a plain `SELECT ... FROM table [WHERE
// ...]` is read as N queries over disjoint ranges of the table's blocks (ctid ranges), each by
// its own server backend, since one backend's per-value encoding is what limits one COPY; a
// partitioned table's read, as ranges of each partition's blocks. The text is rewritten here;
// whether the server plans the original as one scan of one table (or an Append of partitions'),
// and each rewrite as a TID range scan of that table, is what decides (pg_streams.cpp asks it).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::data::postgres {

/// `query` without the ';' a statement copied from psql ends with (before or after a final
/// comment, which stays) and its final blanks: wrapped in `COPY (...)`, or rewritten for a range
/// of blocks, such a ';' is a syntax error. A ';' with a statement after it stays (one is sent).
std::string without_final_semicolons(const std::string& query);

/// A table's blocks [first, end); no end: to the table's end.
struct BlockRange {
  std::uint64_t first = 0;
  std::optional<std::uint64_t> end;
};

/// `query` restricted to the rows in `range` of the one table it reads: its top-level WHERE
/// condition (parenthesised) AND ctid in the range, or a WHERE that says only that. nullopt for a
/// text this does not rewrite: not starting with SELECT, more than one statement, a top-level
/// GROUP/ORDER/LIMIT/OFFSET/FETCH/FOR/WINDOW/HAVING/UNION/INTERSECT/EXCEPT, unterminated quotes.
std::optional<std::string> restricted_to_blocks(const std::string& query, const BlockRange& range);

/// `blocks` blocks in `streams` ranges of (nearly) equal size, the last open-ended (blocks a
/// concurrent insert adds after the size was read hold no row of the snapshot, but cost nothing).
std::vector<BlockRange> block_ranges(std::uint64_t blocks, int streams);

/// A stream's share of one table in a read of several (a partitioned table's partitions):
/// `table` indexes the tables as the read lists them.
struct TablePiece {
  std::size_t table = 0;
  BlockRange range;
};

/// The blocks of tables read one after another (their sizes in `blocks`, in the read's order)
/// dealt to `streams` streams in contiguous shares of about equal size, so that the streams' pieces,
/// stream by stream, give the rows in the order one read of all the tables gives. Each table's last
/// piece is open-ended, and an empty table is read by the stream whose share it falls in; streams
/// left without a piece are dropped. One table: block_ranges's shares.
std::vector<std::vector<TablePiece>> deal_blocks(const std::vector<std::uint64_t>& blocks, int streams);

/// The table a plan reads when it is one scan node of `node_type` ("Seq Scan", "Tid Range
/// Scan") and nothing else: no child plans (joins, sorts, sub-plans), not parallel. `explain_json`
/// is the text of `EXPLAIN (FORMAT JSON, VERBOSE)`. Returns "schema"."table" quoted as SQL quotes
/// identifiers, or nullopt.
std::optional<std::string> single_table_scan(const std::string& explain_json, const std::string& node_type);

/// The tables a plan reads when it is an Append of two or more `node_type` scans and nothing else:
/// a partitioned table's partitions (or an inheritance tree's tables), in the order it reads
/// them, quoted as single_table_scan quotes them; empty for any other plan.
std::vector<std::string> appended_scans(const std::string& explain_json, const std::string& node_type);

/// `query`, a plain SELECT ... FROM one table [WHERE ...], reading `table` alone (`ONLY table AS
/// name`, under the name its FROM item gives the columns, so references such as `t.x` still hold)
/// and only its rows in `range`: one partition's share of a partitioned table's read. nullopt for
/// a FROM item that is not one table's name with an optional alias, and as restricted_to_blocks.
std::optional<std::string> restricted_to_table_blocks(const std::string& query, const std::string& table, const BlockRange& range);

/// The planner's estimate of the rows a plan returns (its top node's "Plan Rows"); 0 when the
/// text of `EXPLAIN (FORMAT JSON)` has none.
std::int64_t planned_rows(const std::string& explain_json);

}  // namespace gputrain::data::postgres
