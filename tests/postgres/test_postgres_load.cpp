// data.source postgres under load and interruption: one snapshot while another client writes, a
// connection the server drops mid-COPY, a stop that cancels the query, a million rows read in
// chunks within a bounded memory peak, bytea images, and a training run whose config.yaml never
// holds the password.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/pg_server.hpp"
#include "support/quiet_trainer.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
namespace fs = std::filesystem;

namespace {

class PostgresLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!server.absent().empty()) GTEST_SKIP() << server.absent();
  }
  data::SourceSpec spec(const std::string& query) const {
    data::SourceSpec s;
    s.source = "postgres";
    s.dsn = server.dsn();
    s.query = query;
    s.labels = {"label"};
    return s;
  }
  test_support::PgServer server;
};

// Rows that come slowly: each waits `seconds` on the server first (the sleep depends on the row,
// so the planner cannot run it once for all).
std::string slow_rows(const std::string& table, double seconds, const std::string& where = "true") {
  return "SELECT x, label FROM " + table + ", LATERAL (SELECT pg_sleep(x * 0 + " + std::to_string(seconds) + ")) AS pause WHERE " + where +
         " ORDER BY x";
}

// A sanitized build's heap is not the reader's: AddressSanitizer keeps freed memory from reuse for
// a while, ThreadSanitizer shadows every byte with more.
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* kSanitizerHeap = "AddressSanitizer holds freed chunks in its quarantine";
#elif defined(__SANITIZE_THREAD__)
constexpr const char* kSanitizerHeap = "ThreadSanitizer keeps shadow memory for every byte";
#else
constexpr const char* kSanitizerHeap = nullptr;
#endif

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

// The validation rows are read after the training rows, from the same snapshot: rows another
// client commits while the training rows stream are in neither.
TEST_F(PostgresLoad, TrainingAndValidationRowsComeFromOneSnapshot) {
  server.exec(
      "DROP TABLE IF EXISTS snap; CREATE TABLE snap (x float8, label int, split text);"
      "INSERT INTO snap SELECT g, g % 2, CASE WHEN g <= 40 THEN 'train' ELSE 'val' END FROM generate_series(1, 60) g;");
  auto s = spec(slow_rows("snap", 0.02, "split = 'train'"));
  s.val_query = "SELECT x, label FROM snap WHERE split = 'val'";
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the training rows are streaming by now
    server.exec("INSERT INTO snap SELECT g, g % 2, 'val' FROM generate_series(61, 160) g;");
  });
  data::Sources sources;
  std::string error;
  try {
    sources = data::open_sources(s);
  } catch (const std::exception& e) {
    error = e.what();
  }
  writer.join();
  ASSERT_EQ(error, "");
  EXPECT_EQ(sources.train->size(), 40);
  EXPECT_EQ(sources.val->size(), 20) << "the validation rows saw rows committed after the snapshot";
  EXPECT_EQ(server.value("SELECT count(*) FROM snap WHERE split = 'val'"), "120");
}

// The server process reading for us ends mid-COPY (terminated, as a crash or an admin would): a
// clear error with exit 1, at once, not a hang.
TEST_F(PostgresLoad, AConnectionDroppedMidCopyIsAClearErrorNotAHang) {
  server.exec(
      "DROP TABLE IF EXISTS dropped; CREATE TABLE dropped AS SELECT g::float8 AS x, g % 2 AS label FROM generate_series(1, 400) g;");
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // This test's COPY alone: the other tests' run beside it on the same server.
    server.exec(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gputrain' AND "
        "query LIKE 'COPY (SELECT x, label FROM dropped%'");
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    data::open_sources(spec(slow_rows("dropped", 0.01)));
    ADD_FAILURE() << "the load went through";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::failure);
    EXPECT_NE(std::string(e.what()).find("while sending data.query's rows"), std::string::npos) << e.what();
  }
  killer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

// A stop (Ctrl-C) during the load: the progress callback throws, the query is cancelled on the
// server (no COPY of ours is left running there), and the error propagates.
TEST_F(PostgresLoad, AStopMidLoadCancelsTheQueryOnTheServer) {
  server.exec(
      "DROP TABLE IF EXISTS stopped; CREATE TABLE stopped AS SELECT g::float8 AS x, g % 2 AS label FROM generate_series(1, 2000) g;");
  auto s = spec(slow_rows("stopped", 0.01));
  s.row_progress = [](const std::string&, std::int64_t, std::int64_t, std::uint64_t) {
    if (core::stop_requested()) throw Error("interrupted", "", ExitCode::interrupted);
  };
  core::clear_stop_request();
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    core::request_stop();
  });
  try {
    data::open_sources(s);
    ADD_FAILURE() << "the load went through";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::interrupted) << e.what();
  }
  stopper.join();
  core::clear_stop_request();
  EXPECT_EQ(server.active_after_waiting("COPY (SELECT x, label FROM stopped%"), "0") << "the COPY still runs on the server";
}

// A million rows of 64 float4 columns (256 MB as floats): read in chunks, so the process's memory
// peak stays near one copy of the table, not two.
TEST_F(PostgresLoad, AMillionRowsOf64FloatsLoadWithinOneCopyOfMemory) {
  std::string columns, values;
  for (int i = 0; i < 64; ++i) {
    columns += ", f" + std::to_string(i) + " float4";
    values += ", (g % 1000)::float4 / " + std::to_string(i + 1);
  }
  server.exec("DROP TABLE IF EXISTS big; CREATE TABLE big (label int" + columns + "); INSERT INTO big SELECT g % 10" + values +
              " FROM generate_series(1, 1000000) g;");
  const long before = peak_rss_kib();
  const auto sources = data::open_sources(spec("SELECT * FROM big"));
  const auto set = *sources.train->tensors();
  ASSERT_EQ(set.size(), 1000000);
  ASSERT_EQ(set.inputs.size(1), 64);
  EXPECT_FLOAT_EQ(set.inputs[999][3].item<float>(), static_cast<float>(1000 % 1000) / 4.0f);
  const double table_kib = 1e6 * 64 * 4 / 1024.0;
  const long grown = peak_rss_kib() - before;
  std::cerr << "peak grew " << grown / 1024 << " MiB for a " << static_cast<long>(table_kib / 1024) << " MiB table\n";
  if (kSanitizerHeap) GTEST_SKIP() << kSanitizerHeap << ": the peak measures that, not the reader";
  EXPECT_LT(grown, 1.5 * table_kib) << "the table was held about twice";
}

TEST_F(PostgresLoad, ByteaImagesDecodeToTheImageSize) {
  // A JPEG and a PNG the image tests decode.
  const fs::path images = fs::path(gputrain::test_support::format_fixtures_dir()) / "images" / "exact";
  const std::vector<fs::path> files{images / "rgb.jpg", images / "rgb.png"};
  server.exec("DROP TABLE IF EXISTS pictures; CREATE TABLE pictures (id int, img bytea, label int);");
  PGconn* conn = PQconnectdb(server.dsn().c_str());
  for (std::size_t i = 0; i < 2; ++i) {
    std::ifstream in(files[i], std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string id = std::to_string(i);
    const char* params[] = {id.c_str(), bytes.data(), id.c_str()};
    const int lengths[] = {0, static_cast<int>(bytes.size()), 0};
    const int formats[] = {0, 1, 0};
    PQclear(PQexecParams(conn, "INSERT INTO pictures VALUES ($1::int, $2, $3::int)", 3, nullptr, params, lengths, formats, 0));
  }
  PQclear(PQexec(conn, "INSERT INTO pictures VALUES (9, 'not an image', 1)"));
  PQfinish(conn);
  auto s = spec("SELECT img, label FROM pictures ORDER BY id");
  s.image_size = {16, 24};
  const auto sources = data::open_sources(s);
  const auto set = *sources.train->tensors();
  EXPECT_EQ(set.inputs.sizes(), (std::vector<std::int64_t>{2, 3, 16, 24}));
  EXPECT_EQ(set.inputs.scalar_type(), at::kByte);
  ASSERT_EQ(sources.notes.size(), 1U);
  EXPECT_NE(sources.notes[0].find("1 row of data.query held images that did not decode"), std::string::npos) << sources.notes[0];
}

// No image that decodes left 0 samples, which the run called a batch-size problem (data.drop_last).
TEST_F(PostgresLoad, AQueryWhoseImagesAllFailToDecodeIsRefusedSayingSo) {
  server.exec(
      "DROP TABLE IF EXISTS scrap; CREATE TABLE scrap AS SELECT decode(repeat('ff', 64), 'hex') AS img, g % 2 AS label FROM "
      "generate_series(1, 5) g;");
  auto s = spec("SELECT img, label FROM scrap");
  s.image_size = {8, 8};
  try {
    data::open_sources(s);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("none of the 5 images of data.query decodes (row 1: neither a JPEG nor a PNG"), std::string::npos)
        << e.what();
    EXPECT_NE(e.remedy().find("whole JPEG or PNG files"), std::string::npos) << e.remedy();
  }
}

namespace {

train::Config rows_run(const test_support::PgServer& server, const fs::path& dir, std::vector<std::string> more = {}) {
  std::vector<std::string> all{"data.source=postgres", "data.dsn=" + server.dsn(), "data.query=SELECT a, label FROM changing",
                               "data.labels=label",    "model.name=mlp",           "model.hidden=[4]",
                               "train.epochs=2",       "train.batch_size=10",      "device=cpu",
                               "logging.progress=off", "checkpoint.every_steps=2", "logging.dir=" + dir.string()};
  all.insert(all.end(), more.begin(), more.end());
  return train::load_config({{}, all, ""});
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

// The rows a run read are in its checkpoints and weights (query, count, checksum); a resumed run
// whose rows changed says so and goes on, or with data.require_same stops.
TEST_F(PostgresLoad, AResumedRunOnChangedRowsSaysSoOrStops) {
  server.exec(
      "DROP TABLE IF EXISTS changing; CREATE TABLE changing AS SELECT g::float8 AS a, g % 2 AS label FROM generate_series(1, 40) g;");
  const auto dir = fs::temp_directory_path() / "gputrain-postgres-changing";
  fs::remove_all(dir);
  {
    core::clear_stop_request();
    auto options = test_support::quiet_trainer();
    options.after_step = [](std::int64_t step) {
      if (step == 2) core::request_stop();
    };
    train::Trainer first(rows_run(server, dir), options);
    EXPECT_TRUE(first.fit().interrupted);
    core::clear_stop_request();
  }
  server.exec("INSERT INTO changing VALUES (41, 1), (42, 0);");
  try {
    train::Trainer strict(rows_run(server, dir, {"data.require_same=true"}), test_support::quiet_trainer());
    ADD_FAILURE() << "a resume on changed rows with data.require_same started";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the rows of the database changed since"), std::string::npos) << what;
    EXPECT_NE(what.find("its run read data.query: 40 rows, checksum "), std::string::npos) << what;
    EXPECT_NE(what.find("this one reads data.query: 42 rows, checksum "), std::string::npos) << what;
  }
  // Without it the run goes on, says so, and its weights name the rows they learnt from.
  train::Trainer lenient(rows_run(server, dir), test_support::quiet_trainer());
  const auto result = lenient.fit();
  EXPECT_FALSE(result.interrupted);
  EXPECT_NE(file_text(dir / "training.log").find("note: the rows of the database changed since"), std::string::npos)
      << file_text(dir / "training.log");
  std::map<std::string, std::string> metadata;
  data::read_safetensors(result.weights_path, &metadata);
  EXPECT_EQ(metadata["data.query"], "SELECT a, label FROM changing");
  EXPECT_EQ(metadata["data.rows"], "42");
  EXPECT_EQ(metadata["data.checksum"].size(), 16U);
}

// A run from a query: it trains, validates on data.val_query, and its config.yaml shows the DSN
// with the password masked.
TEST_F(PostgresLoad, ATrainingRunReadsTheQueriesAndNeverWritesThePassword) {
  server.exec(
      "DROP TABLE IF EXISTS runs; CREATE TABLE runs (a float8, b float8, label int, split text);"
      "INSERT INTO runs SELECT random(), random(), g % 2, CASE WHEN g % 5 = 0 THEN 'val' ELSE 'train' END FROM generate_series(1, 200) g;");
  const auto dir = fs::temp_directory_path() / "gputrain-postgres-run";
  fs::remove_all(dir);
  const auto config = train::load_config(
      {{},
       {"data.source=postgres", "data.dsn=" + server.tcp_dsn(server.password()),
        "data.query=SELECT a, b, label FROM runs WHERE split = 'train'", "data.val_query=SELECT a, b, label FROM runs WHERE split = 'val'",
        "data.labels=label", "model.name=mlp", "model.hidden=[8]", "train.epochs=1", "train.batch_size=32", "device=cpu",
        "logging.progress=off", "logging.dir=" + dir.string()},
       ""});
  train::Trainer trainer(config, test_support::quiet_trainer());
  const auto result = trainer.fit();
  EXPECT_EQ(result.steps, 5);  // 160 rows at 32
  ASSERT_TRUE(result.last_epoch && result.last_epoch->val_accuracy);
  std::ifstream yaml(dir / "config.yaml");
  const std::string text((std::istreambuf_iterator<char>(yaml)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(server.password()), std::string::npos) << text;
  EXPECT_NE(text.find("postgresql://trainer:****@127.0.0.1"), std::string::npos) << text;
}
