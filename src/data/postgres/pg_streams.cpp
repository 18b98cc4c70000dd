#include "pg_streams.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "gputrain/core/error.hpp"
#include "gputrain/device/system_info.hpp"
#include "pg_binary.hpp"
#include "pg_split.hpp"

namespace gputrain::data::postgres {
namespace {

constexpr int kAutoMostStreams = 4;
constexpr std::uint64_t kAutoBlocksPerStream = 1024;  // 8 MB of table: less is not worth a connection
// A server answers a further stream's BEGIN at once; a pooler (PgBouncer) whose server
// connections the other streams hold queues it for its query_wait_timeout (2 minutes).
constexpr double kFurtherStreamPatience = 3;

// Thrown from a stream's tick when another stream failed or the load was stopped: the stream's
// query is cancelled and the stream ends without an error of its own.
struct StreamStopped {};

// One stream's read: its connection and query, its decoder, and what it has received so far
// (read by the thread that reports progress).
struct Stream {
  Connection* conn = nullptr;
  std::vector<std::string> queries;  // one COPY each, one after another: its share of the rows
  RowDecoder* decoder = nullptr;
  std::atomic<std::int64_t> tuples{0};
  std::atomic<std::uint64_t> bytes{0};
  std::uint64_t fingerprint = 0;
  std::exception_ptr error;
};

// Table names (quoted as identifiers) as a list of SQL strings: 'a', 'b'.
std::string as_sql_strings(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& name : names) {
    list += list.empty() ? "'" : ", '";
    for (const char c : name) list += c == '\'' ? std::string("''") : std::string(1, c);
    list += "'";
  }
  return list;
}

// Streams one query's rows through the stream's decoder; `tick` is called while it waits and may throw.
void read_copy(Stream& s, const std::string& query, const std::string& what, const std::function<void()>& tick) {
  const auto before = s.tuples.load();
  TupleReader reader([&](const std::vector<Field>& fields) {
    s.fingerprint += tuple_fingerprint(fields);
    s.decoder->add(fields);
  });
  try {
    s.conn->copy_out(
        query, what,
        [&](const char* data, std::size_t size) {
          reader.feed(data, size);
          s.bytes.fetch_add(size, std::memory_order_relaxed);
          s.tuples.store(before + reader.tuples(), std::memory_order_relaxed);
        },
        tick);
  } catch (const Error&) {
    throw;
  } catch (const std::runtime_error& e) {  // bytes that are not the COPY format
    throw Error(what + ": the server's COPY stream could not be read: " + e.what(), "report this with the query and PostgreSQL's version");
  }
  if (!reader.finished()) throw Error(what + ": the COPY stream ended without its trailer", "run again; report it if it repeats");
}

void read_stream(Stream& s, const std::string& what, const std::function<void()>& tick) {
  for (const auto& query : s.queries) read_copy(s, query, what, tick);
}

// Each stream on a thread of its own; this one tells `report` how far they are, ~5 times a
// second. The first failing stream (or a stop thrown by `report`) stops the others, whose queries
// are cancelled; then the error of the first stream in order that failed is thrown.
void read_in_parallel(std::vector<std::unique_ptr<Stream>>& streams, const std::string& what, const std::function<void()>& report) {
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable done;
  std::size_t finished = 0;
  std::vector<std::thread> threads;
  const auto join = [&] {
    for (auto& t : threads) t.join();
    threads.clear();
  };
  try {
    for (auto& stream : streams)
      threads.emplace_back([&, s = stream.get()] {
        try {
          read_stream(*s, what, [&] {
            if (stop) throw StreamStopped{};
          });
        } catch (const StreamStopped&) {
        } catch (...) {
          s->error = std::current_exception();
          stop = true;
        }
        std::lock_guard lock(mutex);
        ++finished;
        done.notify_one();
      });
    std::unique_lock lock(mutex);
    while (!done.wait_for(lock, std::chrono::milliseconds(200), [&] { return finished == streams.size(); })) {
      lock.unlock();
      report();
      lock.lock();
    }
  } catch (...) {
    stop = true;
    join();
    throw;
  }
  join();
  for (const auto& s : streams)
    if (s->error) std::rethrow_exception(s->error);
}

}  // namespace

CopyStreams::CopyStreams(Connection& main, std::string dsn, int streams)
    : main_(main), dsn_(std::move(dsn)), most_(streams), asked_(streams > 1) {
  // The cores this process may use (taskset, a container's quota), as the loader's sizing counts them.
  if (most_ <= 0) most_ = std::clamp(static_cast<int>(device::read_usable_cores()), 1, kAutoMostStreams);
}

CopyStreams::~CopyStreams() = default;

void CopyStreams::say(const std::string& note) {
  if (asked_ && std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(note);
}

std::vector<std::vector<std::string>> CopyStreams::split(const std::string& query, const std::string& what, std::int64_t& estimated_rows) {
  // Probes in a savepoint: a rewrite the server refuses must not abort the snapshot's transaction.
  main_.run("SAVEPOINT gputrain_split; SET LOCAL max_parallel_workers_per_gather = 0");
  const auto plan = main_.try_value("EXPLAIN (FORMAT JSON, VERBOSE) " + query);
  estimated_rows = plan ? planned_rows(*plan) : 0;
  const auto shape = plan && most_ > 1 ? streams_for(query, what, *plan) : Split{};
  main_.run("ROLLBACK TO SAVEPOINT gputrain_split; RELEASE SAVEPOINT gputrain_split");
  const int streams = shape.streams > 1 ? join_snapshot(shape.streams) : 1;
  if (streams <= 1) return {{query}};
  // The rewrites' texts differ from the one checked by their numbers and table names only.
  std::vector<std::vector<std::string>> queries;
  for (const auto& pieces : deal_blocks(shape.blocks, streams)) {
    auto& texts = queries.emplace_back();
    for (const auto& piece : pieces)
      texts.push_back(shape.partitions ? *restricted_to_table_blocks(query, shape.tables[piece.table], piece.range)
                                       : *restricted_to_blocks(query, piece.range));
  }
  return queries;
}

CopyStreams::Split CopyStreams::streams_for(const std::string& query, const std::string& what, const std::string& plan) {
  Split shape;
  if (const auto table = single_table_scan(plan, "Seq Scan")) {
    shape.tables = {*table};
  } else {
    shape.tables = appended_scans(plan, "Seq Scan");  // a partitioned table's partitions
    shape.partitions = true;
  }
  if (shape.tables.empty()) {
    say("note: " + what +
        " is read over one COPY stream: only a plain SELECT ... FROM one table [WHERE ...] (or a partitioned table) splits "
        "into block ranges (this one joins, sorts, groups, limits or reads a view)");
    return {};
  }
  shape.blocks = blocks_of(shape.tables);
  std::uint64_t blocks = 0;
  for (const auto b : shape.blocks) blocks += b;
  const auto per_stream = asked_ ? 1 : kAutoBlocksPerStream;
  const auto n = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(most_), blocks / per_stream));
  if (n <= 1) {
    say("note: " + what + " reads " + std::to_string(blocks) + " blocks of " +
        (shape.partitions ? std::to_string(shape.tables.size()) + " partitions" : shape.tables.front()) +
        ": too few to split; it is read over one COPY stream");
    return {};
  }
  // A partition is read by its own name, which needs its own SELECT grant: the parent's is not enough.
  if (shape.partitions && main_.try_value("SELECT bool_and(has_table_privilege(t::regclass, 'SELECT')) FROM unnest(ARRAY[" +
                                          as_sql_strings(shape.tables) + "]::text[]) AS u(t)") == "f") {
    say("note: " + what +
        " is read over one COPY stream: this user may read the partitioned table, but not each of its partitions by name, "
        "which a split reads (GRANT SELECT ON each partition, or ALTER DEFAULT PRIVILEGES for new ones)");
    return {};
  }
  // Row-level security of the parent applies to reads through it only: its partitions read by
  // name would give rows its policies hide.
  const auto secured = shape.partitions
                           ? main_.try_value("SELECT bool_or(c.relrowsecurity) FROM unnest(ARRAY[" + as_sql_strings(shape.tables) +
                                             "]::text[]) AS u(t), pg_partition_ancestors(t::regclass) AS a JOIN "
                                             "pg_class c ON c.oid = a.relid")
                           : std::optional<std::string>("f");
  if (secured != "f") {
    say("note: " + what + " is read over one COPY stream: " +
        (secured ? "its partitioned table has row-level security, whose policies a read of each partition by name would not apply"
                 : "this server cannot say whether its partitions have row-level security (pg_partition_ancestors: PostgreSQL "
                   "12 or later)"));
    return {};
  }
  if (!rewrites_plan_as_range_scans(query, what, shape)) return {};
  shape.streams = n;
  return shape;
}

bool CopyStreams::rewrites_plan_as_range_scans(const std::string& query, const std::string& what, const Split& shape) {
  // A partitioned table's rewrites differ by the partition's name alone: the first, the last and
  // a sample between them speak for all.
  const auto count = shape.tables.size();
  std::vector<std::size_t> checked;
  for (std::size_t t = 0; t < count; t += std::max<std::size_t>(1, count / 16)) checked.push_back(t);
  if (checked.back() != count - 1) checked.push_back(count - 1);
  for (const auto t : checked) {
    const BlockRange range{0, shape.blocks[t]};
    const auto restricted =
        shape.partitions ? restricted_to_table_blocks(query, shape.tables[t], range) : restricted_to_blocks(query, range);
    if (!restricted) {
      say("note: " + what + " is read over one COPY stream: gputrain splits a plain SELECT ... FROM table [[AS] name] [WHERE ...], " +
          "not one that starts with WITH or ends with ORDER BY, LIMIT or the like");
      return false;
    }
    // The server has the last word: the rewrite must be a TID range scan of the same table.
    const auto restricted_plan = main_.try_value("EXPLAIN (FORMAT JSON, VERBOSE) " + *restricted);
    if (!restricted_plan || single_table_scan(*restricted_plan, "Tid Range Scan") != shape.tables[t]) {
      say("note: " + what + " is read over one COPY stream: restricted to a range of " +
          (shape.partitions ? "a partition's" : std::string("its table's")) + " blocks, it does not plan as a range scan");
      return false;
    }
  }
  return true;
}

std::vector<std::uint64_t> CopyStreams::blocks_of(const std::vector<std::string>& tables) {
  const auto sizes = main_.try_value(
      "SELECT string_agg((pg_relation_size(t::regclass) / current_setting('block_size')::bigint)::text, ',' ORDER BY i) FROM "
      "unnest(ARRAY[" +
      as_sql_strings(tables) + "]::text[]) WITH ORDINALITY AS u(t, i)");
  std::vector<std::uint64_t> blocks;
  for (std::size_t at = 0; sizes && at <= sizes->size();) {
    const auto comma = std::min(sizes->find(',', at), sizes->size());
    blocks.push_back(std::strtoull(sizes->c_str() + at, nullptr, 10));
    at = comma + 1;
  }
  if (blocks.size() != tables.size()) blocks.assign(tables.size(), 0);  // unknown: too few to split
  return blocks;
}

int CopyStreams::join_snapshot(int count) {
  if (snapshot_.empty()) {
    const auto id = main_.try_value("SELECT pg_export_snapshot()");
    if (!id) {
      say("note: the server exports no snapshot (a pooler, or a standby): the queries are read over one COPY stream");
      most_ = 1;
      return 1;
    }
    snapshot_ = *id;
  }
  while (static_cast<int>(extra_.size()) + 1 < count) {
    try {
      auto conn = std::make_unique<Connection>(dsn_);
      conn->answer_within(kFurtherStreamPatience);
      conn->run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      conn->run("SET TRANSACTION SNAPSHOT '" + snapshot_ + "'");
      conn->answer_within(0);
      extra_.push_back(std::move(conn));
    } catch (const Error& e) {
      if (e.exit_code() == ExitCode::interrupted) throw;  // Ctrl-C while it waited: not a stream to do without
      say("note: a connection for a further COPY stream failed, reading over " + std::to_string(extra_.size() + 1) + ": " + e.what());
      most_ = static_cast<int>(extra_.size()) + 1;
      break;
    }
  }
  return static_cast<int>(extra_.size()) + 1;
}

ReadRows CopyStreams::read(const std::string& query, const std::string& what, RowDecoder& decoder, const RowProgress& progress) {
  std::int64_t estimated = 0;
  const auto queries = split(query, what, estimated);
  const auto n = queries.size();
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<RowDecoder> siblings;
  siblings.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    streams.push_back(std::make_unique<Stream>());
    auto& s = *streams.back();
    s.conn = i == 0 ? &main_ : extra_[i - 1].get();
    s.queries = queries[i];
    s.decoder = i == 0 ? &decoder : &siblings.emplace_back(decoder.sibling());
  }
  const auto report = [&] {
    std::int64_t rows = 0;
    std::uint64_t bytes = 0;
    for (const auto& s : streams) rows += s->tuples.load(), bytes += s->bytes.load();
    if (progress) progress(rows, std::max(estimated, rows), bytes);
  };
  report();
  if (n == 1) {
    read_stream(*streams[0], what, report);
  } else {
    read_in_parallel(streams, what, report);
  }
  report();  // the whole count, as the progress line's last word
  ReadRows out;
  out.streams = static_cast<int>(n);
  for (const auto& s : streams) {
    out.fingerprint += s->fingerprint;
    out.tuples += s->tuples.load();
  }
  for (auto& sibling : siblings) decoder.append(std::move(sibling));
  return out;
}

}  // namespace gputrain::data::postgres
