// data.source postgres against a real server (tests/postgres/pg_server.py, a ctest fixture): every
// type the reader takes, NULLs, empty and one-row results, errors that name what to fix, one
// snapshot for training and validation rows, a server that drops the connection mid-COPY, a stop
// mid-load that cancels the query, a million rows loaded in chunks, and bytea images.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/data/postgres.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/pg_server.hpp"
#include "support/quiet_trainer.hpp"

using namespace gputrain;
namespace fs = std::filesystem;

namespace {

class Postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!server.absent().empty()) GTEST_SKIP() << server.absent();
  }
  data::SourceSpec spec(const std::string& query, std::vector<std::string> labels = {"label"}) const {
    data::SourceSpec s;
    s.source = "postgres";
    s.dsn = server.dsn();
    s.query = query;
    s.labels = std::move(labels);
    return s;
  }
  // The message of the error opening `s` throws, and its exit code.
  std::pair<std::string, ExitCode> error_of(const data::SourceSpec& s) const {
    try {
      data::open_sources(s);
    } catch (const Error& e) {
      return {std::string(e.what()) + "\nfix: " + e.remedy(), e.exit_code()};
    }
    ADD_FAILURE() << "no error";
    return {"", ExitCode::ok};
  }
  test_support::PgServer server;
};

std::vector<float> row_of(const at::Tensor& inputs, std::int64_t row) {
  const auto r = inputs[row].contiguous();
  return {r.data_ptr<float>(), r.data_ptr<float>() + r.numel()};
}

}  // namespace

TEST_F(Postgres, EveryTypeReadsAsItsNumbers) {
  server.exec(
      "DROP TABLE IF EXISTS types; CREATE TABLE types (id int, a int2, b int4, c int8, d float4, e float8, f numeric, g bool, "
      "v real[], w float8[], n numeric[], m bool[], color text, label int);"
      "INSERT INTO types VALUES (1, -3, 70000, 5000000000, 1.5, -2.25, 12345.678, true, '{1,2,3}', '{0.5,-0.5}', '{2.5}', '{t,f}', "
      "'red', 0), (2, 4, -1, 0, 0, 1e-3, -0.001, false, '{4,5,6}', '{1,2}', '{-7}', '{f,f}', 'blue', 1);");
  auto s = spec("SELECT * FROM types ORDER BY id");
  s.exclude = {"id"};
  const auto sources = data::open_sources(s);
  const auto set = *sources.train->tensors();
  ASSERT_EQ(set.size(), 2);
  const std::vector<std::string> names{"a",    "b",    "c",    "d",    "e",    "f",    "g",          "v[0]",     "v[1]",
                                       "v[2]", "w[0]", "w[1]", "n[0]", "m[0]", "m[1]", "color=blue", "color=red"};
  EXPECT_EQ(sources.feature_names, names);
  const std::vector<float> first{-3, 70000, 5e9f, 1.5f, -2.25f, 12345.678f, 1, 1, 2, 3, 0.5f, -0.5f, 2.5f, 1, 0, 0, 1};
  EXPECT_EQ(row_of(set.inputs, 0), first);
  const std::vector<float> second{4, -1, 0, 0, 1e-3f, -0.001f, 0, 4, 5, 6, 1, 2, -7, 0, 0, 1, 0};
  EXPECT_EQ(row_of(set.inputs, 1), second);
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0, 1}, at::kLong)));
  EXPECT_EQ(sources.classes, 2);
}

TEST_F(Postgres, TextLabelsAreClassNamesAndValidationUsesTheirIds) {
  server.exec(
      "DROP TABLE IF EXISTS named; CREATE TABLE named (x float8, label text, split text);"
      "INSERT INTO named VALUES (1, 'stay', 'train'), (2, 'churn', 'train'), (3, 'stay', 'train'), (4, 'stay', 'val');");
  auto s = spec("SELECT x, label FROM named WHERE split = 'train' ORDER BY x");
  s.val_query = "SELECT x, label FROM named WHERE split = 'val'";
  const auto sources = data::open_sources(s);
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{"churn", "stay"}));
  EXPECT_TRUE(at::equal(sources.train->tensors()->targets, at::tensor({1, 0, 1}, at::kLong)));
  EXPECT_TRUE(at::equal(sources.val->tensors()->targets, at::tensor({1}, at::kLong)));
  // A training column the validation query lacks (SELECT * beside a list) is named as the training
  // query's, not as a data.features the config does not have.
  s.query = "SELECT * FROM named WHERE split = 'train'";
  const auto [message, code] = error_of(s);
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("data.query's feature column 'split' is not among data.val_query's columns (x, label)\n"
                         "fix: select it in data.val_query too, or leave it out of the features: data.exclude: [split]"),
            std::string::npos)
      << message;
}

// A database in LATIN1 (a legacy one) sends its text in LATIN1 unless asked for UTF-8: class names
// would be bytes that JSON and safetensors metadata cannot hold ('caf\xE9'), and a query's 'é'
// would be read as two characters.
TEST_F(Postgres, ALatin1DatabasesTextComesAsUtf8BothWays) {
  server.exec("DROP DATABASE IF EXISTS latin1");
  server.exec("CREATE DATABASE latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
  server.exec(
      "CREATE TABLE drinks (x float8, label text); INSERT INTO drinks VALUES (1, 'caf\xC3\xA9'), (2, 'cr\xC3\xA8me'), (3, 'th\xC3\xA9');",
      "latin1");
  auto s = spec("SELECT x, label FROM drinks WHERE label <> 'th\xC3\xA9' ORDER BY x");
  s.dsn = server.dsn("latin1");
  const auto sources = data::open_sources(s);
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{"caf\xC3\xA9", "cr\xC3\xA8me"}));
}

// A SQL_ASCII database (no declared encoding) holding Latin-1 bytes: refused with the fix that
// names its encoding in data.dsn, not "fix data.query" (psql, in SQL_ASCII too, runs it fine);
// with client_encoding=LATIN1 the names arrive in UTF-8 and a query's UTF-8 'é' matches the bytes.
// A client_encoding that cannot carry a UTF8 database's text ('€' in LATIN1) is named as such.
TEST_F(Postgres, ASqlAsciiDatabasesBytesAreReadInTheEncodingTheDsnNames) {
  server.exec("DROP DATABASE IF EXISTS bytes_only");
  server.exec("CREATE DATABASE bytes_only ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
  server.exec("CREATE TABLE drinks (x float8, label text); INSERT INTO drinks VALUES (1, E'caf\\xe9'), (2, E'cr\\xe8me'), (3, E'th\\xe9');",
              "bytes_only");
  auto s = spec("SELECT x, label FROM drinks WHERE label <> 'th\xC3\xA9' ORDER BY x");
  s.dsn = server.dsn("bytes_only");
  const auto [message, code] = error_of(s);
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("declares no encoding (SQL_ASCII"), std::string::npos) << message;
  EXPECT_NE(message.find("fix: name the encoding that text was written in, in data.dsn: client_encoding=LATIN1"), std::string::npos)
      << message;
  s.dsn += " client_encoding=LATIN1";
  EXPECT_EQ(data::open_sources(s).class_names, (std::vector<std::string>{"caf\xC3\xA9", "cr\xC3\xA8me"}));

  server.exec(
      "DROP TABLE IF EXISTS prices; CREATE TABLE prices (x float8, label text); INSERT INTO prices VALUES (1, '\xE2\x82\xAC'), (2, "
      "'usd');");
  auto latin1 = spec("SELECT x, label FROM prices");
  latin1.dsn = server.dsn() + " client_encoding=LATIN1";
  const auto [refused, refused_code] = error_of(latin1);
  EXPECT_EQ(refused_code, ExitCode::usage);
  EXPECT_NE(refused.find("client_encoding LATIN1 (from data.dsn) cannot carry"), std::string::npos) << refused;
  EXPECT_NE(refused.find("fix: leave client_encoding out of data.dsn"), std::string::npos) << refused;
}

// Without data.val_query the rows can be split as any source's: data.val_fraction holds some out.
TEST_F(Postgres, ValFractionHoldsRowsOutAndFeaturesPickColumns) {
  server.exec(
      "DROP TABLE IF EXISTS split; CREATE TABLE split AS SELECT g::float8 AS a, -g::float8 AS b, g % 2 AS label FROM generate_series(1, "
      "40) g;");
  auto s = spec("SELECT a, b, label FROM split");
  s.val_fraction = 0.25;
  s.features = {"b"};
  const auto sources = data::open_sources(s);
  EXPECT_EQ(sources.train->size(), 30);
  EXPECT_EQ(sources.val->size(), 10);
  EXPECT_EQ(sources.feature_names, std::vector<std::string>{"b"});
}

TEST_F(Postgres, NullsAreCountedByColumnWithTheFix) {
  server.exec(
      "DROP TABLE IF EXISTS holes; CREATE TABLE holes (x float8, y float8, label int);"
      "INSERT INTO holes VALUES (1, NULL, 0), (NULL, NULL, 1), (3, 3, NULL), (4, 4, 0);");
  const auto [message, code] = error_of(spec("SELECT x, y, label FROM holes"));
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("'label' in 1 row, 'x' in 1 row, 'y' in 2 rows"), std::string::npos) << message;
  EXPECT_NE(message.find("COALESCE(x, 0)"), std::string::npos) << message;  // a feature's: a label filled in would be class 0
  EXPECT_NE(message.find("WHERE label IS NOT NULL AND x IS NOT NULL AND y IS NOT NULL"), std::string::npos) << message;
  EXPECT_NE(message.find("or set data.missing: drop, mean or zero"), std::string::npos) << message;
}

// data.missing: NULL numbers are filled with the training rows' column mean (the validation
// query's too) or 0, or their rows dropped; a NULL text feature is no category; a NULL label is
// still an error.
TEST_F(Postgres, DataMissingFillsOrDropsNullFeatures) {
  server.exec(
      "DROP TABLE IF EXISTS gaps; CREATE TABLE gaps (id int, x float8, y float4, color text, label int, split text);"
      "INSERT INTO gaps VALUES (1, 1, NULL, 'red', 0, 'train'), (2, NULL, 2, NULL, 1, 'train'), (3, 3, 4, 'blue', 1, 'train'),"
      "(4, NULL, NULL, 'red', 0, 'val');");
  auto s = spec("SELECT x, y, color, label FROM gaps WHERE split = 'train' ORDER BY id");
  s.val_query = "SELECT x, y, color, label FROM gaps WHERE split = 'val'";
  s.missing = "mean";
  const auto mean = data::open_sources(s);
  EXPECT_EQ(mean.feature_names, (std::vector<std::string>{"x", "y", "color=blue", "color=red"}));
  EXPECT_EQ(row_of(mean.train->tensors()->inputs, 0), (std::vector<float>{1, 3, 0, 1}));
  EXPECT_EQ(row_of(mean.train->tensors()->inputs, 1), (std::vector<float>{2, 2, 0, 0}));
  EXPECT_EQ(row_of(mean.val->tensors()->inputs, 0), (std::vector<float>{2, 3, 0, 1})) << "the training rows' means";
  EXPECT_EQ(mean.fill_values, (std::vector<std::pair<std::string, double>>{{"x", 2.0}, {"y", 3.0}}));
  ASSERT_FALSE(mean.notes.empty());
  EXPECT_NE(mean.notes.front().find("data.missing: mean: 2 of 3 rows of 'data.query' miss a value ('x' 1, 'y' 1)"), std::string::npos)
      << mean.notes.front();

  s.missing = "drop";
  s.val_query.clear();
  const auto dropped = data::open_sources(s);
  ASSERT_EQ(dropped.train->size(), 1);
  EXPECT_EQ(row_of(dropped.train->tensors()->inputs, 0), (std::vector<float>{3, 4, 1, 0}));
  EXPECT_TRUE(at::equal(dropped.train->tensors()->targets, at::tensor({1}, at::kLong)));

  server.exec("INSERT INTO gaps VALUES (5, 5, 5, 'red', NULL, 'train');");
  s.missing = "zero";
  const auto [message, code] = error_of(s);
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("'label' in 1 row\nfix: leave those rows out: WHERE label IS NOT NULL (a sample needs its label; data.missing "
                         "fills features only)"),
            std::string::npos)
      << message;
}

// Labels that are not class ids are shown as the query has them (not "-1.000000"), with the bound.
TEST_F(Postgres, ALabelThatIsNoClassIdIsShownAsTheQueryHasIt) {
  server.exec("DROP TABLE IF EXISTS ids; CREATE TABLE ids (x float8, label int8); INSERT INTO ids VALUES (1, 0), (2, -1);");
  const auto [negative, code] = error_of(spec("SELECT x, label FROM ids"));
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(negative.find("data.query's label column 'label' holds -1 in row 2: class ids are whole numbers from 0 to 1,000,000,000"),
            std::string::npos)
      << negative;
  const auto [huge, huge_code] = error_of(spec("SELECT x, label * 9000000000 AS label FROM ids WHERE x = 2"));
  EXPECT_NE(huge.find("holds -9000000000 in row 1"), std::string::npos) << huge;
}

// Columns are found by name: a name returned twice, or no column at all, is named as such.
TEST_F(Postgres, AQueryReturningANameTwiceOrNoColumnsIsRefusedSayingSo) {
  server.exec("DROP TABLE IF EXISTS twice; CREATE TABLE twice (x float8, label int); INSERT INTO twice VALUES (1, 0);");
  const auto [message, code] = error_of(spec("SELECT x, x, label FROM twice"));
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("data.query returns two columns named 'x' (columns 1 and 2), and gputrain finds columns by name\n"
                         "fix: give each its own name in the query (... AS x_2), or select it once"),
            std::string::npos)
      << message;
  const auto [none, none_code] = error_of(spec("SELECT FROM twice"));
  EXPECT_NE(none.find("data.labels names column 'label', which data.query does not return; it returns no columns\n"
                      "fix: add the column to data.query's SELECT"),
            std::string::npos)
      << none;
  // data.labels left out: the column named like a label is the fix, among those the query returns.
  const auto [unset, unset_code] = error_of(spec("SELECT x, label AS Target FROM twice", {}));
  EXPECT_EQ(unset_code, ExitCode::usage);
  EXPECT_NE(unset.find("data.labels is not set for the postgres source\n"
                       "fix: set data.labels: target (the column named like a label); data.query returns the columns x, target"),
            std::string::npos)
      << unset;
}

// A text column is a category by its type, not by data.categorical: an id-like one is refused
// naming it as text, with data.exclude (not "remove data.categorical", which the user never set).
TEST_F(Postgres, AnIdLikeTextColumnIsNamedAsTextWithDataExcludeAsTheFix) {
  server.exec(
      "DROP TABLE IF EXISTS named; CREATE TABLE named AS SELECT g::float8 AS x, 'n' || g AS name, g % 2 AS label FROM "
      "generate_series(1, 60) g;");
  const auto [message, code] = error_of(spec("SELECT x, name, label FROM named"));
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("column 'name' of 'data.query' (text) has 60 different values in its 60 rows"), std::string::npos) << message;
  EXPECT_NE(message.find("\nfix: leave it out: data.exclude: [name]"), std::string::npos) << message;
}

// data.missing leaves an array's NULLs alone: the fix says so and offers no COALESCE(array, 0).
TEST_F(Postgres, ANullArrayUnderDataMissingIsNamedAsNotFilled) {
  server.exec(
      "DROP TABLE IF EXISTS holey; CREATE TABLE holey (emb real[], label int);"
      "INSERT INTO holey VALUES ('{1,2}', 0), (NULL, 1);");
  auto s = spec("SELECT emb, label FROM holey");
  s.missing = "mean";
  const auto [message, code] = error_of(s);
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("'emb' in 1 row\nfix: leave those rows out: WHERE emb IS NOT NULL (data.missing fills number and text columns, "
                         "not arrays or images)"),
            std::string::npos)
      << message;
}

TEST_F(Postgres, AnEmptyResultIsAnErrorAndOneRowIsASet) {
  server.exec("DROP TABLE IF EXISTS few; CREATE TABLE few (x float8, label int); INSERT INTO few VALUES (7, 1);");
  const auto [message, code] = error_of(spec("SELECT x, label FROM few WHERE x > 100"));
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("data.query returned no rows"), std::string::npos) << message;
  const auto one = data::open_sources(spec("SELECT x, label FROM few"));
  EXPECT_EQ(one.train->size(), 1);
  EXPECT_EQ(row_of(one.train->tensors()->inputs, 0), std::vector<float>{7});
}

// An enum is a category as text is (its values travel as their labels), as a feature and as the
// label; a domain over a number reads as that number.
TEST_F(Postgres, AnEnumIsACategoryAndADomainItsBaseType) {
  server.exec(
      "DROP TABLE IF EXISTS moods; DROP TYPE IF EXISTS mood; DROP DOMAIN IF EXISTS price;"
      "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy'); CREATE DOMAIN price AS numeric;"
      "CREATE TABLE moods (id int, m mood, p price, label mood);"
      "INSERT INTO moods VALUES (1, 'sad', 2.5, 'ok'), (2, 'happy', 3, 'sad'), (3, 'ok', 4, 'ok');");
  const auto sources = data::open_sources(spec("SELECT m, p, label FROM moods ORDER BY id"));
  EXPECT_EQ(sources.feature_names, (std::vector<std::string>{"m=happy", "m=ok", "m=sad", "p"}));
  EXPECT_EQ(row_of(sources.train->tensors()->inputs, 0), (std::vector<float>{0, 0, 1, 2.5f}));
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{"ok", "sad"}));
}

// The fix for each is SQL the server runs: no cast makes a number of a timestamp, EXTRACT does.
TEST_F(Postgres, AnUnsupportedTypeSaysWhatToMakeOfIt) {
  server.exec(
      "DROP TABLE IF EXISTS dated; CREATE TABLE dated (at timestamp, \"Seen\" date, \"order\" interval, doc jsonb, uid uuid, pt point, "
      "label int); INSERT INTO dated VALUES (now(), '2024-01-02', '1 day', '{\"x\": 2}', gen_random_uuid(), point(1, 2), 0);");
  const auto advice = [&](const std::string& column) {
    const auto [message, code] = error_of(spec("SELECT " + column + ", label FROM dated"));
    EXPECT_EQ(code, ExitCode::usage) << message;
    return message;
  };
  const auto at = advice("at");
  EXPECT_NE(at.find("column 'at' is timestamp without time zone, which gputrain does not read"), std::string::npos) << at;
  EXPECT_NE(at.find("EXTRACT(EPOCH FROM at)::float8 AS at"), std::string::npos) << at;
  EXPECT_EQ(server.value("SELECT EXTRACT(EPOCH FROM at)::float8 > 0 FROM dated"), "t") << "the advice runs";
  const auto seen = advice("\"Seen\"");  // a name SQL must quote is quoted in the fix
  EXPECT_NE(seen.find("EXTRACT(EPOCH FROM \"Seen\")::float8 AS \"Seen\""), std::string::npos) << seen;
  EXPECT_EQ(server.value("SELECT EXTRACT(EPOCH FROM \"Seen\")::float8 AS \"Seen\" FROM dated"), "1704153600");
  const auto order = advice("\"order\"");  // a reserved word too
  EXPECT_NE(order.find("EXTRACT(EPOCH FROM \"order\")::float8 AS \"order\""), std::string::npos) << order;
  const auto doc = advice("doc");
  EXPECT_NE(doc.find("(doc->>'field')::float8 AS doc_field"), std::string::npos) << doc;
  EXPECT_EQ(server.value("SELECT (doc->>'x')::float8 FROM dated"), "2");
  EXPECT_NE(advice("uid").find("an id tells the model nothing about a row: leave it out (data.exclude: [uid])"), std::string::npos);
  const auto pt = advice("pt");  // no cast to float8 exists: not offered
  EXPECT_NE(pt.find("no cast makes a number of it: select numbers the query computes from it, its text as a category (pt::text AS pt)"),
            std::string::npos)
      << pt;
}

TEST_F(Postgres, ArraysOfVaryingLengthAreRefusedWithTheRow) {
  server.exec(
      "DROP TABLE IF EXISTS ragged; CREATE TABLE ragged (id int, emb real[], label int);"
      "INSERT INTO ragged VALUES (1, '{1,2,3}', 0), (2, '{1,2}', 1);");
  const auto [message, code] = error_of(spec("SELECT emb, label FROM ragged ORDER BY id"));
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("column 'emb' holds an array of 2 numbers in row 2, but 3 in the rows before it"), std::string::npos) << message;
}

TEST_F(Postgres, AWrongPasswordNamesUserHostAndPortButNeverThePassword) {
  auto s = spec("SELECT 1 AS x, 0 AS label");
  s.dsn = server.tcp_dsn("not-the-password-42");
  const auto [message, code] = error_of(s);
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("user 'trainer' at 127.0.0.1:" + server.port()), std::string::npos) << message;
  EXPECT_NE(message.find("~/.pgpass"), std::string::npos) << message;
  EXPECT_EQ(message.find("not-the-password-42"), std::string::npos) << message;
  // The right one gets in.
  s.dsn = server.tcp_dsn(server.password());
  EXPECT_EQ(data::open_sources(s).train->size(), 1);
}

TEST_F(Postgres, NoServerAtTheAddressIsAnEnvironmentError) {
  auto s = spec("SELECT 1 AS x, 0 AS label");
  s.dsn = "postgresql://trainer@127.0.0.1:1/postgres?connect_timeout=2";
  const auto [message, code] = error_of(s);
  EXPECT_EQ(code, ExitCode::environment);
  EXPECT_NE(message.find("cannot reach PostgreSQL for user 'trainer' at 127.0.0.1:1"), std::string::npos) << message;
  EXPECT_NE(message.find("pg_isready -h 127.0.0.1 -p 1"), std::string::npos) << message;
}

// A server without SSL asked for it (sslmode=require) is up: "start the server" was the wrong fix.
// A reply that is no PostgreSQL's ("invalid response to SSL negotiation") is not a DSN typo either.
TEST_F(Postgres, SslTheServerDoesNotOfferIsNamedAsTheDsnsDemand) {
  auto s = spec("SELECT 1 AS x, 0 AS label");
  s.dsn = server.tcp_dsn(server.password()) + "?sslmode=require";
  const auto [message, code] = error_of(s);
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("takes no SSL connections, and data.dsn asks for one"), std::string::npos) << message;
  EXPECT_NE(message.find("fix: leave sslmode out of data.dsn"), std::string::npos) << message;
  EXPECT_EQ(message.find(server.password()), std::string::npos) << message;
}

// The role's or the DSN's statement_timeout ending the read is said as such, with the setting
// that lifts it, not as a server that stopped.
TEST_F(Postgres, AStatementTimeoutIsNamedWithTheSettingThatLiftsIt) {
  auto s = spec("SELECT g::float8 AS x, g % 2 AS label FROM generate_series(1, 3000000) g");
  s.dsn = server.dsn() + " options='-c statement_timeout=1'";
  const auto [message, code] = error_of(s);
  EXPECT_EQ(code, ExitCode::failure);
  EXPECT_NE(message.find("ended data.query at its statement_timeout: canceling statement due to statement timeout\n"
                         "fix: raise it for gputrain's connection: add options='-c statement_timeout=0' to data.dsn"),
            std::string::npos)
      << message;
}

TEST_F(Postgres, ASyntaxErrorShowsTheServersMessageAndWhereItPoints) {
  const auto [message, code] = error_of(spec("SELECT 1 AS x, 0 AS label\nFORM nowhere"));  // a typo on the second line
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("data.query: PostgreSQL says: syntax error at or near \"FORM\""), std::string::npos) << message;
  EXPECT_NE(message.find("\n    FORM nowhere\n    ^"), std::string::npos) << message;  // the line it points at, a caret under FORM
}

// A query as psql takes it, copied from a session or a .sql file: a final ';', a comment on its
// last line. Wrapped in COPY (...) both were syntax errors.
TEST_F(Postgres, AQueryEndingInASemicolonOrACommentReadsAsInPsql) {
  server.exec("DROP TABLE IF EXISTS psqlish; CREATE TABLE psqlish AS SELECT g::float8 AS x, g % 2 AS label FROM generate_series(1, 10) g;");
  for (const char* query : {"SELECT x, label FROM psqlish;", "SELECT x, label FROM psqlish ;\n",
                            "SELECT x, label FROM psqlish -- training rows", "SELECT x, label FROM psqlish ORDER BY x; -- sorted;"}) {
    auto s = spec(query);
    s.streams = 1;
    EXPECT_EQ(data::open_sources(s).train->size(), 10) << query;
    EXPECT_GT(data::raw_copy_throughput(s).rows, 0) << query;
  }
}

// COPY takes a DELETE, UPDATE or INSERT with RETURNING: a training run and `gputrain profile`'s
// raw COPY read in a read-only transaction, so such a query is refused and the rows stay; and
// data.query is sent as one statement, so its text cannot end that transaction first.
TEST_F(Postgres, AQueryThatWritesIsRefusedAndChangesNothing) {
  server.exec("DROP TABLE IF EXISTS kept; CREATE TABLE kept AS SELECT g::float8 AS x, g % 2 AS label FROM generate_series(1, 100) g;");
  for (const char* query : {"DELETE FROM kept RETURNING x, label", "UPDATE kept SET x = 0 RETURNING x, label"}) {
    const auto [message, code] = error_of(spec(query));
    EXPECT_EQ(code, ExitCode::usage) << query;
    EXPECT_NE(message.find("in a read-only transaction"), std::string::npos) << message;
    try {
      data::raw_copy_throughput(spec(query));
      ADD_FAILURE() << "the raw COPY ran " << query;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("in a read-only transaction"), std::string::npos) << e.what();
    }
  }
  // Nor can a query's text end the read-only transaction and run statements of its own.
  const auto [message, code] = error_of(spec("SELECT x, label FROM kept; COMMIT; DELETE FROM kept"));
  EXPECT_EQ(code, ExitCode::usage);
  EXPECT_NE(message.find("cannot insert multiple commands into a prepared statement"), std::string::npos) << message;
  try {
    data::raw_copy_throughput(spec("SELECT x, label FROM kept) TO STDOUT; COMMIT; DELETE FROM kept; COPY (SELECT 1"));
    ADD_FAILURE() << "the raw COPY ran several statements";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot insert multiple commands into a prepared statement"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.value("SELECT count(*) || ' ' || sum(x) FROM kept"), "100 5050");
}
