// data.source postgres over several COPY streams (data.streams) against a real server: a plain
// one-table query read in block ranges gives the rows one stream gives, in the same order, with
// text categories, arrays and class names merged; other queries read over one stream; every
// stream sees the first connection's snapshot; one stream's error or a stop ends them all.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/device/system_info.hpp"
#include "support/pg_server.hpp"
#include "support/test_paths.hpp"
#include "support/text_checks.hpp"

using gputrain::test_support::contains;
using namespace gputrain;

namespace {

class PostgresStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!server.absent().empty()) GTEST_SKIP() << server.absent();
  }
  data::SourceSpec spec(const std::string& query, int streams) const {
    data::SourceSpec s;
    s.source = "postgres";
    s.dsn = server.dsn();
    s.query = query;
    s.labels = {"label"};
    s.streams = streams;
    return s;
  }
  std::string error_of(const data::SourceSpec& s) const {
    try {
      data::open_sources(s);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }
  bool notes_say(const data::Sources& sources, const std::string& text) const {
    for (const auto& note : sources.notes)
      if (note.find(text) != std::string::npos) return true;
    return false;
  }
  test_support::PgServer server;
};

void expect_same_sets(const data::Sources& one, const data::Sources& many) {
  const auto a = *one.train->tensors(), b = *many.train->tensors();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(at::equal(a.inputs, b.inputs)) << "the rows' values or order differ";
  EXPECT_TRUE(at::equal(a.targets, b.targets));
  EXPECT_EQ(one.class_names, many.class_names);
  EXPECT_EQ(one.feature_names, many.feature_names);
  EXPECT_EQ(one.provenance, many.provenance) << "the checksum of the rows read";
}

}  // namespace

// Numbers, a text column of categories, an array and text labels, split four ways: each stream
// numbers the categories and labels it met, and the merge gives the one stream's numbering.
TEST_F(PostgresStreams, ASplitQueryReadsTheRowsOneStreamReadsInTheSameOrder) {
  server.exec(
      "DROP TABLE IF EXISTS mixed; CREATE TABLE mixed (id int, x float8, y int4, color text, emb real[], label text, split text);"
      "INSERT INTO mixed SELECT g, g * 0.5, g % 7, (ARRAY['red','green','blue'])[1 + (g / 5000) % 3],"
      " ARRAY[g % 11, g % 13, 1.5]::real[], (ARRAY['cat','dog','owl','elk'])[1 + (g / 3000) % 4],"
      " CASE WHEN g % 10 = 0 THEN 'val' ELSE 'train' END FROM generate_series(1, 30000) g;");
  auto s = spec("SELECT x, y, color, emb, label FROM mixed WHERE split = 'train'", 1);
  s.val_query = "SELECT x, y, color, emb, label FROM mixed WHERE split = 'val'";
  std::map<std::string, std::int64_t> last_told;  // the progress's last word per query: every row
  s.row_progress = [&](const std::string& what, std::int64_t rows, std::int64_t, std::uint64_t) { last_told[what] = rows; };
  const auto one = data::open_sources(s);
  EXPECT_EQ(last_told, (std::map<std::string, std::int64_t>{{"data.query", 27000}, {"data.val_query", 3000}}));
  last_told.clear();
  s.streams = 4;
  const auto four = data::open_sources(s);
  EXPECT_EQ(last_told, (std::map<std::string, std::int64_t>{{"data.query", 27000}, {"data.val_query", 3000}}));
  expect_same_sets(one, four);
  ASSERT_TRUE(one.val && four.val);
  EXPECT_TRUE(at::equal(one.val->tensors()->inputs, four.val->tensors()->inputs));
  EXPECT_TRUE(contains(four.train->description(), "27000 rows, read over 4 COPY streams")) << four.train->description();
  EXPECT_TRUE(contains(four.val->description(), "read over 4 COPY streams")) << four.val->description();
  EXPECT_FALSE(contains(one.train->description(), "COPY streams")) << one.train->description();
  EXPECT_EQ(one.class_names, (std::vector<std::string>{"cat", "dog", "elk", "owl"}));
}

// Images decoded on four threads, in chunks each stream leaves part-filled: joined in order, with
// the rows whose image did not decode counted over every stream.
TEST_F(PostgresStreams, ImagesReadOverStreamsAreTheImagesOneStreamReads) {
  const auto images = std::filesystem::path(gputrain::test_support::format_fixtures_dir()) / "images" / "exact";
  server.exec("DROP TABLE IF EXISTS gallery; CREATE TABLE gallery (id int, img bytea, label int);");
  PGconn* conn = PQconnectdb(server.dsn().c_str());
  int id = 0;
  for (const char* name : {"rgb.jpg", "rgb.png"}) {
    std::ifstream in(images / name, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto text = std::to_string(id++);
    const char* params[] = {text.c_str(), bytes.data()};
    const int lengths[] = {0, static_cast<int>(bytes.size())};
    const int formats[] = {0, 1};
    PQclear(PQexecParams(conn, "INSERT INTO gallery VALUES ($1::int, $2, $1::int)", 2, nullptr, params, lengths, formats, 0));
  }
  PQfinish(conn);
  server.exec(
      "INSERT INTO gallery VALUES (2, 'not an image', 1);"
      "INSERT INTO gallery SELECT id + 10 * g, img, label FROM gallery, generate_series(1, 150) g;");
  auto s = spec("SELECT img, label FROM gallery", 1);
  s.image_size = {8, 12};
  const auto one = data::open_sources(s);
  s.streams = 4;
  const auto four = data::open_sources(s);
  EXPECT_TRUE(contains(four.train->description(), "302 rows, read over 4 COPY streams")) << four.train->description();
  EXPECT_TRUE(at::equal(one.train->tensors()->inputs, four.train->tensors()->inputs));
  EXPECT_TRUE(at::equal(one.train->tensors()->targets, four.train->tensors()->targets));
  ASSERT_EQ(four.notes.size(), 1U);
  EXPECT_TRUE(contains(four.notes[0], "151 rows of data.query held images that did not decode")) << four.notes[0];
}

// Queries whose rows are not one table's, block by block, are read over one stream, and a
// data.streams that asked for more says why.
TEST_F(PostgresStreams, QueriesThatAreNotOneTablesScanAreReadOverOneStream) {
  server.exec(
      "DROP TABLE IF EXISTS whole CASCADE; CREATE TABLE whole AS SELECT g AS id, g::float8 AS x, g % 3 AS label FROM "
      "generate_series(1, 20000) g; CREATE VIEW whole_view AS SELECT x, label FROM whole WHERE id > 10;");
  for (const char* query :
       {"SELECT x, label FROM whole ORDER BY id DESC", "SELECT x, label FROM whole_view",
        "SELECT avg(x) AS x, label FROM whole GROUP BY label", "WITH w AS (SELECT x, label FROM whole) SELECT x, label FROM w",
        "SELECT a.x, b.label FROM whole a JOIN whole b USING (id)", "SELECT x, label FROM (SELECT * FROM whole) s"}) {
    const auto sources = data::open_sources(spec(query, 4));
    EXPECT_FALSE(contains(sources.train->description(), "COPY streams")) << query;
    EXPECT_TRUE(notes_say(sources, "is read over one COPY stream")) << query;
  }
  EXPECT_EQ(data::open_sources(spec("SELECT x, label FROM whole_view", 4)).train->size(), 19990);
  // Auto says nothing of it; a small table is not worth a second connection.
  const auto automatic = data::open_sources(spec("SELECT x, label FROM whole ORDER BY id", 0));
  EXPECT_TRUE(automatic.notes.empty());
  EXPECT_FALSE(contains(data::open_sources(spec("SELECT x, label FROM whole", 0)).train->description(), "COPY streams"));
}

// A partitioned table's partitions (the ones its WHERE leaves), dealt to the streams by blocks,
// each read under the name the query gives its table: the rows one stream reads, in its order,
// over any number of streams; an empty partition and a default one included.
TEST_F(PostgresStreams, APartitionedTableSplitsAcrossItsPartitionsInTheirOrder) {
  server.exec(
      "DROP TABLE IF EXISTS by_day CASCADE; CREATE TABLE by_day (x float8, label int, day int) PARTITION BY RANGE (day);"
      "CREATE TABLE by_day_a PARTITION OF by_day FOR VALUES FROM (0) TO (2); CREATE TABLE by_day_b PARTITION OF by_day FOR "
      "VALUES FROM (2) TO (9); CREATE TABLE by_day_empty PARTITION OF by_day FOR VALUES FROM (100) TO (200);"
      "CREATE TABLE by_day_rest PARTITION OF by_day DEFAULT;"
      "INSERT INTO by_day SELECT g * 0.25, g % 3, g % 12 FROM generate_series(1, 24000) g;");
  // Partitions partitioned again: the server plans their leaves as one Append too.
  server.exec(
      "DROP TABLE IF EXISTS nested CASCADE; CREATE TABLE nested (x float8, label int, day int, hour int) PARTITION BY RANGE (day);"
      "CREATE TABLE nested_a PARTITION OF nested FOR VALUES FROM (0) TO (5) PARTITION BY RANGE (hour);"
      "CREATE TABLE nested_a1 PARTITION OF nested_a FOR VALUES FROM (0) TO (12); CREATE TABLE nested_a2 PARTITION OF nested_a FOR "
      "VALUES FROM (12) TO (24); CREATE TABLE nested_b PARTITION OF nested FOR VALUES FROM (5) TO (10);"
      "INSERT INTO nested SELECT g, g % 3, g % 10, g % 24 FROM generate_series(1, 20000) g;");
  for (const char* query :
       {"SELECT x, label FROM by_day", "SELECT d.x, d.label FROM public.by_day AS d WHERE d.day <> 4;",
        "SELECT x, label FROM by_day WHERE day >= 1 AND day < 50 -- two partitions and the default", "SELECT x, label FROM nested"}) {
    const auto one = data::open_sources(spec(query, 1));
    for (const int streams : {2, 3, 4}) {
      const auto many = data::open_sources(spec(query, streams));
      expect_same_sets(one, many);
      EXPECT_TRUE(contains(many.train->description(), "read over " + std::to_string(streams) + " COPY streams"))
          << query << ": " << many.train->description();
      EXPECT_TRUE(many.notes.empty()) << many.notes.front();
    }
  }
  EXPECT_EQ(data::open_sources(spec("SELECT x, label FROM by_day", 4)).train->size(), 24000);
  // A user granted the partitioned table but not its partitions reads it over one stream, told why.
  server.exec("DROP ROLE IF EXISTS parent_reader; CREATE ROLE parent_reader LOGIN; GRANT SELECT ON by_day TO parent_reader;");
  auto parent_only = spec("SELECT x, label FROM by_day", 4);
  parent_only.dsn = server.dsn() + " user=parent_reader";
  const auto read = data::open_sources(parent_only);
  EXPECT_EQ(read.train->size(), 24000);
  EXPECT_TRUE(notes_say(read, "but not each of its partitions by name")) << read.train->description();
  // Row-level security on the parent: its partitions by name would give the rows it hides.
  server.exec(
      "GRANT SELECT ON by_day_a, by_day_b, by_day_empty, by_day_rest TO parent_reader; ALTER TABLE by_day ENABLE ROW LEVEL "
      "SECURITY; CREATE POLICY even_days ON by_day FOR SELECT USING (day % 2 = 0);");
  const auto secured = data::open_sources(parent_only);
  server.exec("DROP POLICY even_days ON by_day; ALTER TABLE by_day DISABLE ROW LEVEL SECURITY;");
  EXPECT_EQ(secured.train->size(), 12000) << "the policy's rows only";
  EXPECT_TRUE(notes_say(secured, "row-level security")) << secured.train->description();
}

// Auto opens one stream per core this process may use (its affinity, a container's quota), as
// the loader's sizing counts them, not per core of the machine: pinned to one CPU, one stream.
TEST_F(PostgresStreams, AutoCountsTheCoresThisProcessMayUse) {
  // fillfactor 10: about 2,700 blocks (21 MB, room for two automatic streams) out of 40,000 rows.
  server.exec(
      "DROP TABLE IF EXISTS roomy; CREATE TABLE roomy (id int, x float8, label int) WITH (fillfactor = 10); INSERT INTO roomy "
      "SELECT g, g, g % 2 FROM generate_series(1, 40000) g;");
  ASSERT_GE(std::stoll(server.value("SELECT pg_relation_size('roomy') / 8192")), 2048);
  const auto streams_of = [&] { return data::open_sources(spec("SELECT x, label FROM roomy", 0)).copy_streams; };
  EXPECT_EQ(streams_of(), std::min(2, static_cast<int>(device::read_usable_cores())));
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // this thread, which sizes the streams
  const auto pinned = streams_of();
  sched_setaffinity(0, sizeof all, &all);
  EXPECT_EQ(pinned, 1);
}

// The streams' connections import the first one's snapshot: rows another client deletes and
// inserts once the snapshot is taken (here: as the first progress is told, before any COPY) are
// neither lost nor added, in every stream's range.
TEST_F(PostgresStreams, EveryStreamReadsTheFirstConnectionsSnapshot) {
  server.exec(
      "DROP TABLE IF EXISTS moving; CREATE TABLE moving AS SELECT g AS id, g::float8 AS x, g % 2 AS label FROM generate_series(1, 20000) "
      "g;");
  auto s = spec("SELECT x, label FROM moving", 4);
  bool changed = false;
  s.row_progress = [&](const std::string&, std::int64_t, std::int64_t, std::uint64_t) {
    if (changed) return;
    changed = true;
    server.exec("DELETE FROM moving WHERE id % 3 = 0; INSERT INTO moving SELECT g, g, 0 FROM generate_series(20001, 25000) g;");
  };
  const auto sources = data::open_sources(s);
  ASSERT_TRUE(changed);
  EXPECT_TRUE(contains(sources.train->description(), "20000 rows, read over 4 COPY streams")) << sources.train->description();
  EXPECT_EQ(sources.train->tensors()->inputs.to(at::kDouble).sum().item<double>(), 20000.0 * 20001 / 2)
      << "rows of another snapshot were read";
  EXPECT_EQ(server.value("SELECT count(*) FROM moving"), "18334");
}

// NULLs in several streams' ranges: one error counting them all, as one stream counts them.
TEST_F(PostgresStreams, NullsInEveryStreamAreCountedTogether) {
  server.exec(
      "DROP TABLE IF EXISTS holes; CREATE TABLE holes AS SELECT CASE WHEN g % 1000 = 0 THEN NULL ELSE g END::float8 AS x,"
      " g % 2 AS label FROM generate_series(1, 20000) g;");
  const auto one = error_of(spec("SELECT x, label FROM holes", 1));
  EXPECT_TRUE(contains(one, "'x' in 20 rows")) << one;
  EXPECT_EQ(error_of(spec("SELECT x, label FROM holes", 4)), one);
}

// A row in the last stream's range the server cannot compute: that stream's error (the query's,
// with the server's message) ends the load at once, and the other streams' queries, slow ones
// (a millisecond a row, ten seconds each), are cancelled.
TEST_F(PostgresStreams, OneStreamsErrorEndsEveryStream) {
  server.exec(
      "DROP TABLE IF EXISTS fails; CREATE TABLE fails AS SELECT g AS id, g::float8 AS x, g % 2 AS label FROM generate_series(1, 40000) g;");
  const auto start = std::chrono::steady_clock::now();
  const auto message = error_of(spec(
      "SELECT 1.0 / (id - 39000) AS x, label FROM fails WHERE length(pg_sleep(CASE WHEN id < 30000 THEN 0.001 ELSE 0 END)::text) = 0", 4));
  EXPECT_TRUE(contains(message, "division by zero")) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4)) << "the other streams ran on";
  EXPECT_EQ(server.active_after_waiting("COPY (SELECT 1.0 / (id - 39000)%"), "0") << "a stream's COPY still runs on the server";
}

// A stop (Ctrl-C) while four streams read: every stream's query is cancelled on the server.
TEST_F(PostgresStreams, AStopCancelsEveryStreamsQuery) {
  server.exec(
      "DROP TABLE IF EXISTS halted; CREATE TABLE halted AS SELECT g::float8 AS x, g % 2 AS label FROM generate_series(1, 40000) g;");
  auto s = spec("SELECT x, label FROM halted WHERE length(pg_sleep(0.001)::text) = 0", 4);
  s.row_progress = [](const std::string&, std::int64_t, std::int64_t, std::uint64_t) {
    if (core::stop_requested()) throw Error("interrupted", "", ExitCode::interrupted);
  };
  core::clear_stop_request();
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    core::request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    const auto sources = data::open_sources(s);
    ADD_FAILURE() << "the load went through: " << sources.train->description();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::interrupted) << e.what();
  }
  stopper.join();
  core::clear_stop_request();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(server.active_after_waiting("COPY (SELECT x, label FROM halted%"), "0") << "a stream's COPY still runs on the server";
}
