// The binary COPY format, the password mask and the text recoder, on bytes made here (no server): a
// stream split at every byte reads the same tuples, each type decodes to its value, a DSN never
// shows its password, and text converts between a session's encoding and UTF-8.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "data/postgres/dsn.hpp"
#include "data/postgres/pg_binary.hpp"
#include "data/postgres/pg_text.hpp"
#include "gputrain/core/error.hpp"

using namespace gputrain;
using namespace gputrain::data::postgres;

namespace {

std::string be(std::uint64_t value, int bytes) {
  std::string out;
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}

std::string field(const std::string& bytes) { return be(bytes.size(), 4) + bytes; }
const std::string kNull = be(0xffffffff, 4);

std::string header() { return std::string("PGCOPY\n\377\r\n\0", 11) + be(0, 4) + be(0, 4); }
std::string tuple(const std::vector<std::string>& fields) {
  std::string out = be(fields.size(), 2);
  for (const auto& f : fields) out += f;
  return out;
}
std::string trailer() { return be(0xffff, 2); }

// numeric's binary form from base-10000 digits.
std::string numeric(std::int16_t weight, std::uint16_t sign, std::uint16_t scale, const std::vector<std::uint16_t>& digits) {
  std::string out = be(digits.size(), 2) + be(static_cast<std::uint16_t>(weight), 2) + be(sign, 2) + be(scale, 2);
  for (auto d : digits) out += be(d, 2);
  return out;
}

std::string float4_array(const std::vector<float>& values) {
  std::string out = be(1, 4) + be(0, 4) + be(oid::kFloat4, 4) + be(values.size(), 4) + be(1, 4);
  for (float v : values) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    out += be(4, 4) + be(bits, 4);
  }
  return out;
}

}  // namespace

TEST(PgBinary, AStreamSplitAnywhereReadsTheSameTuples) {
  const std::string stream = header() + tuple({field(be(7, 4)), kNull}) + tuple({field(be(-2 & 0xffffffff, 4)), field("cat")}) + trailer();
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    std::vector<std::string> seen;
    TupleReader reader([&](const std::vector<Field>& fields) {
      seen.push_back(std::to_string(static_cast<int>(number_of(oid::kInt4, fields[0]))) + "," +
                     (fields[1].null() ? "NULL" : std::string(text_of(fields[1]))));
    });
    reader.feed(stream.data(), cut);
    reader.feed(stream.data() + cut, stream.size() - cut);
    EXPECT_TRUE(reader.finished()) << "cut at " << cut;
    EXPECT_EQ(seen, (std::vector<std::string>{"7,NULL", "-2,cat"})) << "cut at " << cut;
  }
}

TEST(PgBinary, BytesThatAreNotTheFormatAreRefused) {
  TupleReader reader([](const std::vector<Field>&) {});
  const std::string junk = std::string("PGCOPZ\n\377\r\n\0", 11) + std::string(8, '\0');
  EXPECT_THROW(reader.feed(junk.data(), junk.size()), std::runtime_error);
}

TEST(PgBinary, NumbersDecodeToTheirValues) {
  const auto number = [](std::uint32_t type, const std::string& bytes) {
    return number_of(type, Field{bytes.data(), static_cast<std::int32_t>(bytes.size())});
  };
  EXPECT_EQ(number(oid::kInt2, be(0xfffd, 2)), -3);
  EXPECT_EQ(number(oid::kInt8, be(5000000000ULL, 8)), 5e9);
  EXPECT_EQ(number(oid::kBool, std::string(1, '\1')), 1.0);
  float f = -2.5f;
  std::uint32_t f_bits;
  std::memcpy(&f_bits, &f, 4);
  EXPECT_EQ(number(oid::kFloat4, be(f_bits, 4)), -2.5);
  EXPECT_DOUBLE_EQ(number(oid::kNumeric, numeric(1, 0, 3, {1, 2345, 6780})), 12345.678);  // 1|2345.6780
  EXPECT_DOUBLE_EQ(number(oid::kNumeric, numeric(-1, 0x4000, 3, {10})), -0.001);          // -0.0010
  EXPECT_EQ(number(oid::kNumeric, numeric(0, 0, 0, {})), 0.0);
  EXPECT_TRUE(std::isnan(number(oid::kNumeric, numeric(0, 0xC000, 0, {}))));
  EXPECT_THROW(number(oid::kInt4, be(1, 2)), std::runtime_error);  // a length that does not fit
}

TEST(PgBinary, ArraysAppendTheirElementsAndRefuseNulls) {
  const auto bytes = float4_array({1.5f, -2.0f, 3.0f});
  std::vector<float> out;
  EXPECT_EQ(append_vector(Field{bytes.data(), static_cast<std::int32_t>(bytes.size())}, out, "data.query", "emb", 1), 3U);
  EXPECT_EQ(out, (std::vector<float>{1.5f, -2.0f, 3.0f}));
  auto with_null = be(1, 4) + be(1, 4) + be(oid::kFloat4, 4) + be(1, 4) + be(1, 4) + kNull;
  try {
    append_vector(Field{with_null.data(), static_cast<std::int32_t>(with_null.size())}, out, "data.val_query", "emb", 7);
    FAIL() << "a NULL element was read";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "data.val_query's column 'emb' holds an array with a NULL element (element 1) in row 7");
    EXPECT_NE(e.remedy().find("array_replace(emb, NULL, 0)"), std::string::npos) << e.remedy();
  }
}

TEST(PgBinary, KindsOfTheTypesTheReaderTakes) {
  EXPECT_EQ(kind_of(oid::kNumeric), ColumnKind::number);
  EXPECT_EQ(kind_of(oid::kFloat8Array), ColumnKind::vector);
  EXPECT_EQ(kind_of(oid::kVarchar), ColumnKind::text);
  EXPECT_EQ(kind_of(oid::kBytea), ColumnKind::bytes);
  EXPECT_FALSE(kind_of(1114).has_value());  // timestamp
}

TEST(Dsn, APasswordIsNeverShown) {
  EXPECT_EQ(mask_password("postgresql://ana:s3cr3t@db.example:5432/shop"), "postgresql://ana:****@db.example:5432/shop");
  EXPECT_EQ(mask_password("postgres://ana@db/shop?password=s3cr3t&sslmode=require"),
            "postgres://ana@db/shop?password=****&sslmode=require");
  EXPECT_EQ(mask_password("host=db user=ana password=s3cr3t dbname=shop"), "host=db user=ana password=**** dbname=shop");
  EXPECT_EQ(mask_password("host=db password = 'se cr\\'et' dbname=shop"), "host=db password = **** dbname=shop");
  EXPECT_EQ(mask_password("postgresql://ana@db:5432/shop"), "postgresql://ana@db:5432/shop");  // nothing to hide
}

// A session in data.dsn's client_encoding: text converted from and to UTF-8 with iconv, under the
// C library's names for PostgreSQL's encodings; SQL_ASCII (no encoding) and UTF8 pass as they are.
TEST(TextRecoder, ConvertsBetweenPostgresEncodingsAndUtf8) {
  EXPECT_EQ(iconv_name("WIN1252"), "CP1252");
  EXPECT_EQ(iconv_name("latin1"), "LATIN1");
  EXPECT_EQ(iconv_name("EUC_JP"), "EUC-JP");
  EXPECT_EQ(iconv_name("ISO_8859_5"), "ISO-8859-5");
  EXPECT_EQ(iconv_name("KOI8R"), "KOI8-R");
  EXPECT_EQ(iconv_name("UTF8"), "UTF-8");
  EXPECT_FALSE(TextRecoder("UTF8", "UTF8").converts());
  EXPECT_FALSE(TextRecoder("SQL_ASCII", "UTF8").converts());
  EXPECT_EQ(*TextRecoder("SQL_ASCII", "UTF8")("caf\xE9"), "caf\xE9");  // no encoding to read it in: as it is
  EXPECT_EQ(*TextRecoder("LATIN1", "UTF8")("caf\xE9"), "caf\xC3\xA9");
  EXPECT_EQ(*TextRecoder("WIN1252", "UTF8")("\x80uro"), "\xE2\x82\xACuro");
  EXPECT_EQ(*TextRecoder("SJIS", "UTF8")("\x93\xFA\x96\x7B"), "\xE6\x97\xA5\xE6\x9C\xAC");  // 日本
  EXPECT_EQ(*TextRecoder("UTF8", "LATIN1")("th\xC3\xA9"), "th\xE9");
  EXPECT_FALSE(TextRecoder("UTF8", "LATIN1")("\xE2\x82\xAC").has_value());  // no euro sign in Latin-1
  EXPECT_FALSE(TextRecoder("SJIS", "UTF8")("\x93").has_value());            // a character cut short
  const std::string long_text(10000, '\xE9');                               // past the first guess of room
  EXPECT_EQ(TextRecoder("LATIN1", "UTF8")(long_text)->size(), 20000u);
  try {
    TextRecoder("NO_SUCH_ENCODING", "UTF8");
    ADD_FAILURE() << "an encoding iconv lacks was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("NO_SUCH_ENCODING"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("leave client_encoding out of data.dsn"), std::string::npos) << e.remedy();
  }
}
