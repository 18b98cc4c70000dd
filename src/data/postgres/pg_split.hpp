#pragma once
// Splitting a query's rows across several COPY streams: a plain `SELECT ... FROM table [WHERE
// ...]` is read as N queries over disjoint ranges of the table's blocks (ctid ranges), each by
// its own server backend, since one backend's per-value encoding is what limits one COPY. The
// text is rewritten here; whether the server plans the original as one scan of one table, and
// the rewrite as a TID range scan of that same table, is what decides (pg_streams.cpp asks it).

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

/// The table a plan reads when it is one scan node of `node_type` ("Seq Scan", "Tid Range
/// Scan") and nothing else: no child plans (joins, sorts, sub-plans), not parallel. `explain_json`
/// is the text of `EXPLAIN (FORMAT JSON, VERBOSE)`. Returns "schema"."table" quoted as SQL quotes
/// identifiers, or nullopt.
std::optional<std::string> single_table_scan(const std::string& explain_json, const std::string& node_type);

/// How many tables a plan reads when it is an Append of plain sequential scans and nothing else:
/// a partitioned table's (or an inheritance tree's) partitions, which one table's block ranges do
/// not split. 0 for any other plan.
std::size_t partitions_scanned(const std::string& explain_json);

/// The planner's estimate of the rows a plan returns (its top node's "Plan Rows"); 0 when the
/// text of `EXPLAIN (FORMAT JSON)` has none.
std::int64_t planned_rows(const std::string& explain_json);

}  // namespace gputrain::data::postgres
