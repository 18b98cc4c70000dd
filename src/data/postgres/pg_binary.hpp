#pragma once
// PostgreSQL's binary COPY format (COPY ... TO STDOUT (FORMAT binary)): the stream's header and
// tuples as libpq hands them over, and the binary forms of the column types the reader takes.
// Pure byte work, no connection: the tests feed it bytes made by hand.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputrain::data::postgres {

/// The type OIDs the reader knows (PostgreSQL's pg_type.dat; fixed across versions).
namespace oid {
constexpr std::uint32_t kBool = 16, kBytea = 17, kName = 19, kInt8 = 20, kInt2 = 21, kInt4 = 23, kText = 25, kFloat4 = 700, kFloat8 = 701,
                        kBpchar = 1042, kVarchar = 1043, kNumeric = 1700, kFloat4Array = 1021, kFloat8Array = 1022, kInt2Array = 1005,
                        kInt4Array = 1007, kInt8Array = 1016, kNumericArray = 1231, kBoolArray = 1000;
}

/// How a column reaches the model.
enum class ColumnKind {
  number,  ///< int2, int4, int8, float4, float8, numeric, bool: one input
  vector,  ///< real[], double precision[], integer, numeric and bool arrays: one input per element, the same count in every row
  text,    ///< text, varchar, char, name: a category (one-hot inputs), or a class name as the label
  bytes,   ///< bytea: an encoded image (JPEG or PNG)
};

/// The kind of a column of type `type`, or nullopt for a type the reader does not take.
std::optional<ColumnKind> kind_of(std::uint32_t type);

/// One field of a tuple: its bytes, or null.
struct Field {
  const char* data = nullptr;
  std::int32_t length = -1;  ///< -1: NULL
  bool null() const { return length < 0; }
};

/// Splits a binary COPY stream into tuples. Feed it each piece libpq returns (a piece may hold
/// the header, any number of tuples, part of one, or the trailer); each complete tuple goes to
/// `on_tuple` with its fields. Throws std::runtime_error on bytes that are not the format.
class TupleReader {
 public:
  using OnTuple = std::function<void(const std::vector<Field>& fields)>;
  explicit TupleReader(OnTuple on_tuple) : on_tuple_(std::move(on_tuple)) {}
  void feed(const char* data, std::size_t size);
  /// The trailer was read: the stream is complete.
  bool finished() const { return finished_; }
  std::int64_t tuples() const { return tuples_; }

 private:
  // Reads what it can from [data, data + size); returns the bytes used.
  std::size_t parse(const char* data, std::size_t size);

  OnTuple on_tuple_;
  std::string pending_;  // an incomplete piece, kept until the rest arrives
  bool header_read_ = false, finished_ = false;
  std::int64_t tuples_ = 0;
  std::vector<Field> fields_;
};

/// A number column's value as a double (bool: 0 or 1; numeric: its nearest double, NaN and the
/// infinities kept). Throws std::runtime_error on a length that does not fit the type.
double number_of(std::uint32_t type, const Field& field);

/// A one-dimensional array's elements appended to `out` as floats; returns their count. Throws
/// UsageError for more dimensions or a NULL element, naming `what` ("data.query"), `column` and
/// the `row` (from 1).
std::size_t append_vector(const Field& field, std::vector<float>& out, const std::string& what, const std::string& column,
                          std::int64_t row);

/// A fixed-size number type's decoder (float4, float8, int2, int4, int8, bool) and its field
/// length, for the rows' hot loop and number_of; nullptr for other types.
using NumberDecoder = double (*)(const char* data);
NumberDecoder fixed_decoder(std::uint32_t type, std::int32_t* length);

/// A tuple's fingerprint: its fields' lengths and bytes hashed (FNV-1a) and mixed, so that the sum
/// over a result's tuples is the same in any row order and changes with any row.
std::uint64_t tuple_fingerprint(const std::vector<Field>& fields);

/// A text column's value.
inline std::string_view text_of(const Field& field) { return {field.data, static_cast<std::size_t>(field.length)}; }

}  // namespace gputrain::data::postgres
