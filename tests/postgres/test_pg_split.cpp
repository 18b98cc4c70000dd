// Splitting a query into block ranges (src/data/postgres/pg_split.hpp), without a server: the
// text rewrite finds the one top-level WHERE past quotes, comments and sub-queries and refuses
// what it cannot rewrite; the ranges cover every block once; a plan is one table's scan or not.
#include <gtest/gtest.h>

#include "data/postgres/pg_split.hpp"

using namespace gputrain::data::postgres;

namespace {

const BlockRange kMiddle{10, 20};
const std::string kRange = "ctid >= '(10,0)'::tid AND ctid < '(20,0)'::tid";

}  // namespace

TEST(PgSplit, ATopLevelWhereIsParenthesisedAndRestrictedToTheBlocks) {
  EXPECT_EQ(restricted_to_blocks("SELECT a, b FROM t WHERE x = 1 OR y = 2", kMiddle),
            "SELECT a, b FROM t WHERE ( x = 1 OR y = 2\n) AND " + kRange);
  // A comment at the end cannot swallow the condition: it starts a line of its own.
  EXPECT_EQ(restricted_to_blocks("select a from t where x -- the training rows", kMiddle),
            "select a from t where ( x -- the training rows\n) AND " + kRange);
  EXPECT_EQ(restricted_to_blocks("SELECT a FROM t  ;\n ", BlockRange{5, std::nullopt}), "SELECT a FROM t\nWHERE ctid >= '(5,0)'::tid");
}

// A statement as psql takes it ends in ';', perhaps before or after a comment: the ';' goes, the
// comment stays; a ';' inside quotes or comments, or with a statement after it, stays.
TEST(PgSplit, FinalSemicolonsGoAndEverythingElseStays) {
  EXPECT_EQ(without_final_semicolons("SELECT a FROM t;"), "SELECT a FROM t");
  EXPECT_EQ(without_final_semicolons("SELECT a FROM t ;; \n"), "SELECT a FROM t");
  EXPECT_EQ(without_final_semicolons("SELECT a FROM t; -- the rows;"), "SELECT a FROM t -- the rows;");
  EXPECT_EQ(without_final_semicolons("SELECT a FROM t /* ; */ ;"), "SELECT a FROM t /* ; */");
  EXPECT_EQ(without_final_semicolons("SELECT ';' FROM t"), "SELECT ';' FROM t");
  EXPECT_EQ(without_final_semicolons("SELECT a FROM t; DELETE FROM t;"), "SELECT a FROM t; DELETE FROM t");
  EXPECT_EQ(without_final_semicolons("SELECT 'unclosed;"), "SELECT 'unclosed;");
  EXPECT_EQ(restricted_to_blocks("SELECT a FROM t; -- all", kMiddle), "SELECT a FROM t -- all\nWHERE " + kRange);
}

TEST(PgSplit, WhereInQuotesCommentsAndSubqueriesIsNotTheQuerysOwn) {
  const std::string hidden =
      "SELECT 'WHERE' AS w, \"where\", E'it\\'s WHERE', $$ WHERE $$, $tag$ ' WHERE $tag$ /* WHERE /* nested */ WHERE */ "
      "FROM t -- WHERE";
  EXPECT_EQ(restricted_to_blocks(hidden, kMiddle), hidden + "\nWHERE " + kRange);
  EXPECT_EQ(restricted_to_blocks("SELECT a FROM t WHERE a IN (SELECT b FROM u WHERE c) AND 'x''WHERE' <> ''", kMiddle),
            "SELECT a FROM t WHERE ( a IN (SELECT b FROM u WHERE c) AND 'x''WHERE' <> ''\n) AND " + kRange);
  // $1 is a parameter, not a dollar quote; the identifier a$b holds a dollar.
  EXPECT_EQ(restricted_to_blocks("SELECT a$b FROM t WHERE a = $1", kMiddle), "SELECT a$b FROM t WHERE ( a = $1\n) AND " + kRange);
}

TEST(PgSplit, WhatCannotBeRestrictedIsRefused) {
  for (const char* query : {"SELECT a FROM t ORDER BY a", "SELECT a, count(*) FROM t GROUP BY a", "SELECT a FROM t LIMIT ALL",
                            "SELECT a FROM t OFFSET 0", "SELECT a FROM t UNION SELECT a FROM u", "SELECT a FROM t FETCH FIRST 3 ROWS ONLY",
                            "SELECT a FROM t FOR SHARE", "WITH q AS (SELECT a FROM t) SELECT a FROM q", "TABLE t", "VALUES (1)",
                            "SELECT a FROM t; SELECT b FROM u", "SELECT 'unterminated FROM t", "SELECT (a FROM t", "SELECT a) FROM t",
                            "SELECT a /* open FROM t", "SELECT a FROM t WHERE x WHERE y", ""}) {
    EXPECT_EQ(restricted_to_blocks(query, kMiddle), std::nullopt) << query;
  }
}

TEST(PgSplit, RangesCoverEveryBlockOnceTheLastOpenEnded) {
  const auto ranges = block_ranges(10, 3);
  ASSERT_EQ(ranges.size(), 3u);
  std::uint64_t next = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(ranges[i].first, next);
    if (i + 1 < ranges.size()) {
      ASSERT_TRUE(ranges[i].end);
      EXPECT_GE(*ranges[i].end - ranges[i].first, 3u);
      next = *ranges[i].end;
    } else {
      EXPECT_FALSE(ranges[i].end) << "rows past the size read must still be read";
    }
  }
  EXPECT_EQ(block_ranges(7, 1).size(), 1u);
  EXPECT_EQ(block_ranges(7, 0).size(), 1u);
  // A count whose product with the stream number would overflow (the fuzz target found it).
  const auto huge = block_ranges(UINT64_MAX, 3);
  EXPECT_EQ(*huge[1].end - huge[1].first, UINT64_MAX / 3);
  EXPECT_EQ(huge[1].first, *huge[0].end);
}

TEST(PgSplit, APlanIsOneTablesScanOrNothing) {
  const auto plan = [](const std::string& fields) { return "[{\"Plan\": {" + fields + "}}]"; };
  const std::string seq = "\"Node Type\": \"Seq Scan\", \"Parallel Aware\": false, \"Relation Name\": \"rows\", \"Schema\": \"public\"";
  EXPECT_EQ(single_table_scan(plan(seq), "Seq Scan"), "\"public\".\"rows\"");
  EXPECT_EQ(single_table_scan(plan(seq), "Tid Range Scan"), std::nullopt);
  EXPECT_EQ(single_table_scan(plan(seq + ", \"Plans\": [{}]"), "Seq Scan"), std::nullopt) << "a sub-plan";
  EXPECT_EQ(single_table_scan(plan("\"Node Type\": \"Seq Scan\", \"Parallel Aware\": true, \"Relation Name\": \"r\", \"Schema\": \"s\""),
                              "Seq Scan"),
            std::nullopt);
  EXPECT_EQ(single_table_scan(plan("\"Node Type\": \"Seq Scan\", \"Relation Name\": \"a\\\"b\", \"Schema\": \"s\""), "Seq Scan"),
            "\"s\".\"a\"\"b\"");
  EXPECT_EQ(single_table_scan(plan("\"Node Type\": \"Sort\""), "Seq Scan"), std::nullopt);
  EXPECT_EQ(single_table_scan("not json", "Seq Scan"), std::nullopt);
  EXPECT_EQ(planned_rows(plan(seq + ", \"Plan Rows\": 26999")), 26999);
  EXPECT_EQ(planned_rows(plan(seq)), 0);
  EXPECT_EQ(planned_rows("not json"), 0);
  // Fields of other types (a server that speaks PostgreSQL's protocol but writes plans its own
  // way) are no plan, not an exception: json::value() threw on these.
  EXPECT_EQ(single_table_scan("[{\"Plan\": 5}]", "Seq Scan"), std::nullopt);
  EXPECT_EQ(single_table_scan(plan("\"Node Type\": 1, \"Relation Name\": [], \"Schema\": {}"), "Seq Scan"), std::nullopt);
  EXPECT_EQ(single_table_scan(plan(seq + ", \"Parallel Aware\": \"no\""), "Seq Scan"), "\"public\".\"rows\"");
  EXPECT_EQ(planned_rows("[{\"Plan\": []}]"), 0);
  // A partitioned table: an Append of its partitions' scans, in the order it reads them.
  const auto part = [](const char* name) {
    return "{\"Node Type\": \"Seq Scan\", \"Relation Name\": \"" + std::string(name) + "\", \"Schema\": \"s\"}";
  };
  EXPECT_EQ(appended_scans(plan("\"Node Type\": \"Append\", \"Plans\": [" + part("b") + ", " + part("a") + "]"), "Seq Scan"),
            (std::vector<std::string>{"\"s\".\"b\"", "\"s\".\"a\""}));
  EXPECT_TRUE(appended_scans(plan("\"Node Type\": \"Append\", \"Plans\": [" + part("a") + ", {\"Node Type\": \"Hash Join\"}]"), "Seq Scan")
                  .empty());
  EXPECT_TRUE(appended_scans(plan("\"Node Type\": \"Append\", \"Plans\": [" + part("a") + "]"), "Seq Scan").empty());
  EXPECT_TRUE(appended_scans(plan(seq), "Seq Scan").empty());
  EXPECT_TRUE(appended_scans(plan("\"Node Type\": \"Append\", \"Plans\": 5"), "Seq Scan").empty());
  EXPECT_TRUE(appended_scans("[5]", "Seq Scan").empty());
  EXPECT_EQ(planned_rows(plan("\"Plan Rows\": \"many\"")), 0);
  EXPECT_EQ(planned_rows(plan("\"Plan Rows\": 1e300")), 0);
}

// A partition's share: the FROM item becomes that partition alone under the name the query's
// columns use, whatever way the item was written; anything but one table's name is refused.
TEST(PgSplit, APartitionsShareReadsItUnderTheQuerysName) {
  const BlockRange range{2, 5};
  const std::string p = "\"public\".\"events_1\"";
  EXPECT_EQ(restricted_to_table_blocks("SELECT x, label FROM events", p, range),
            "SELECT x, label FROM ONLY \"public\".\"events_1\" AS events\nWHERE ctid >= '(2,0)'::tid AND ctid < '(5,0)'::tid");
  EXPECT_EQ(restricted_to_table_blocks("SELECT e.x, label FROM public.events e WHERE day < 5;", p, {0, std::nullopt}),
            "SELECT e.x, label FROM ONLY \"public\".\"events_1\" AS e\nWHERE ( day < 5\n) AND ctid >= '(0,0)'::tid");
  for (const char* query : {"SELECT x FROM ONLY events AS ev", "SELECT x FROM \"My Events\" /* c */ ev", "SELECT x FROM s.events * ev",
                            "SELECT x FROM events -- all\n"}) {
    const auto rewritten = restricted_to_table_blocks(query, p, range);
    ASSERT_TRUE(rewritten) << query;
    EXPECT_NE(rewritten->find("FROM ONLY \"public\".\"events_1\" AS "), std::string::npos) << *rewritten;
  }
  EXPECT_NE(restricted_to_table_blocks("SELECT x FROM \"My Events\"", p, range)->find("AS \"My Events\""), std::string::npos);
  for (const char* query : {"SELECT x FROM events, other", "SELECT x FROM events e JOIN other o USING (id)",
                            "SELECT x FROM events TABLESAMPLE SYSTEM (10)", "SELECT x FROM (SELECT * FROM events) s",
                            "SELECT x FROM events LEFT", "SELECT 1", "SELECT x FROM events ORDER BY x", "SELECT x FROM $$e$$"})
    EXPECT_EQ(restricted_to_table_blocks(query, p, range), std::nullopt) << query;
}

// Tables read one after another, dealt to streams: contiguous, about equal shares; every block
// of every table once; each table's tail open-ended; read stream by stream, the tables' order.
TEST(PgSplit, TablesBlocksAreDealtInTheirOrder) {
  const auto dealt = deal_blocks({10, 0, 30, 20}, 3);  // 60 blocks end to end: 20 a stream
  ASSERT_EQ(dealt.size(), 3u);
  const auto piece = [](std::size_t table, std::uint64_t first, std::optional<std::uint64_t> end) {
    return std::make_tuple(table, first, end);
  };
  std::vector<std::vector<std::tuple<std::size_t, std::uint64_t, std::optional<std::uint64_t>>>> got;
  for (const auto& pieces : dealt) {
    auto& row = got.emplace_back();
    for (const auto& p : pieces) row.push_back(piece(p.table, p.range.first, p.range.end));
  }
  EXPECT_EQ(got[0], (decltype(got)::value_type{piece(0, 0, std::nullopt), piece(1, 0, std::nullopt), piece(2, 0, 10)}));
  EXPECT_EQ(got[1], (decltype(got)::value_type{piece(2, 10, std::nullopt)}));  // blocks 20-40 end to end: table 2's tail
  EXPECT_EQ(got[2], (decltype(got)::value_type{piece(3, 0, std::nullopt)}));
  // One table: block_ranges's shares.
  const auto one = deal_blocks({7}, 2);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0][0].range.end, block_ranges(7, 2)[0].end);
  EXPECT_EQ(one[1][0].range.first, block_ranges(7, 2)[1].first);
  EXPECT_EQ(one[1][0].range.end, std::nullopt);
  // Fewer blocks than streams: the empty shares are dropped; empty tables are read once.
  EXPECT_EQ(deal_blocks({1, 0}, 4).size(), 1u);
  EXPECT_EQ(deal_blocks({0, 0}, 2).size(), 1u);
  EXPECT_EQ(deal_blocks({0, 0}, 2)[0].size(), 2u);
}
