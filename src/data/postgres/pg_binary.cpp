#include "pg_binary.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "gputrain/core/error.hpp"

namespace gputrain::data::postgres {
namespace {

// The header: an 11-byte signature, 32-bit flags, then an extension area of the given length.
constexpr char kSignature[] = "PGCOPY\n\377\r\n";
constexpr std::size_t kSignatureSize = 11;

std::uint16_t be16(const char* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return __builtin_bswap16(v);
}
std::uint32_t be32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
std::uint64_t be64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

// numeric's binary form: digit count, weight (of the first digit, in base-10000 places), sign,
// display scale, then the base-10000 digits.
double numeric_of(const Field& f) {
  if (f.length < 8) throw std::runtime_error("a numeric field of " + std::to_string(f.length) + " bytes");
  const auto digits = static_cast<std::int16_t>(be16(f.data));
  const auto weight = static_cast<std::int16_t>(be16(f.data + 2));
  const auto sign = be16(f.data + 4);
  if (sign == 0xC000) return std::numeric_limits<double>::quiet_NaN();
  if (sign == 0xD000) return std::numeric_limits<double>::infinity();
  if (sign == 0xF000) return -std::numeric_limits<double>::infinity();
  if (f.length != 8 + 2 * digits) throw std::runtime_error("a numeric field of " + std::to_string(f.length) + " bytes");
  long double value = 0;
  for (std::ptrdiff_t i = 0; i < digits; ++i) value = value * 10000 + be16(f.data + 8 + 2 * i);
  value *= std::pow(10000.0L, weight - digits + 1);
  return static_cast<double>(sign == 0x4000 ? -value : value);
}

double element_of(std::uint32_t type, const char* p, std::int32_t length) { return number_of(type, Field{p, length}); }

}  // namespace

std::optional<ColumnKind> kind_of(std::uint32_t type) {
  switch (type) {
    case oid::kBool:
    case oid::kInt2:
    case oid::kInt4:
    case oid::kInt8:
    case oid::kFloat4:
    case oid::kFloat8:
    case oid::kNumeric:
      return ColumnKind::number;
    case oid::kFloat4Array:
    case oid::kFloat8Array:
    case oid::kInt2Array:
    case oid::kInt4Array:
    case oid::kInt8Array:
    case oid::kNumericArray:
    case oid::kBoolArray:
      return ColumnKind::vector;
    case oid::kText:
    case oid::kVarchar:
    case oid::kBpchar:
    case oid::kName:
      return ColumnKind::text;
    case oid::kBytea:
      return ColumnKind::bytes;
    default:
      return std::nullopt;
  }
}

void TupleReader::feed(const char* data, std::size_t size) {
  if (pending_.empty()) {
    const auto used = parse(data, size);
    pending_.assign(data + used, size - used);
    return;
  }
  pending_.append(data, size);
  const auto used = parse(pending_.data(), pending_.size());
  pending_.erase(0, used);
}

std::size_t TupleReader::parse(const char* data, std::size_t size) {
  std::size_t at = 0;
  if (!header_read_) {
    if (size < kSignatureSize + 8) return 0;
    if (std::memcmp(data, kSignature, kSignatureSize) != 0) throw std::runtime_error("the stream does not start with PGCOPY's signature");
    const auto extension = be32(data + kSignatureSize + 4);
    if (size < kSignatureSize + 8 + extension) return 0;
    at = kSignatureSize + 8 + extension;
    header_read_ = true;
  }
  while (!finished_ && size - at >= 2) {
    const auto count = static_cast<std::int16_t>(be16(data + at));
    if (count == -1) {
      finished_ = true;
      return at + 2;
    }
    if (count < 0) throw std::runtime_error("a tuple of " + std::to_string(count) + " fields");
    // The whole tuple must be here before any of it is taken.
    std::size_t p = at + 2;
    fields_.resize(static_cast<std::size_t>(count));
    bool complete = true;
    for (auto& field : fields_) {
      if (size - p < 4) {
        complete = false;
        break;
      }
      field.length = static_cast<std::int32_t>(be32(data + p));
      p += 4;
      field.data = data + p;
      if (field.length > 0) {
        if (size - p < static_cast<std::size_t>(field.length)) {
          complete = false;
          break;
        }
        p += static_cast<std::size_t>(field.length);
      }
    }
    if (!complete) break;
    on_tuple_(fields_);
    ++tuples_;
    at = p;
  }
  return at;
}

double number_of(std::uint32_t type, const Field& f) {
  if (type == oid::kNumeric) return numeric_of(f);
  std::int32_t length = 0;
  const auto decode = fixed_decoder(type, &length);
  if (!decode) throw std::runtime_error("type " + std::to_string(type) + " is not a number");
  if (f.length != length)
    throw std::runtime_error("a field of " + std::to_string(f.length) + " bytes for a " + std::to_string(length) + "-byte type");
  return decode(f.data);
}

// An array: dimensions, a has-nulls flag, the element type, each dimension's size and lower
// bound, then each element as a length and its bytes.
std::size_t append_vector(const Field& f, std::vector<float>& out, const std::string& what, const std::string& column, std::int64_t row) {
  if (f.length < 12) throw std::runtime_error("an array field of " + std::to_string(f.length) + " bytes");
  const auto dims = static_cast<std::int32_t>(be32(f.data));
  const auto element = be32(f.data + 8);
  if (dims == 0) return 0;  // '{}'
  if (dims != 1)
    throw UsageError(
        what + "'s column '" + column + "' holds an array of " + std::to_string(dims) + " dimensions in row " + std::to_string(row),
        "flatten it in the query to one dimension (one input per element)");
  if (f.length < 20) throw std::runtime_error("an array field of " + std::to_string(f.length) + " bytes");
  const auto count = static_cast<std::int32_t>(be32(f.data + 12));
  const char* p = f.data + 20;
  const char* end = f.data + f.length;
  for (std::int32_t i = 0; i < count; ++i) {
    if (end - p < 4) throw std::runtime_error("an array cut short");
    const auto length = static_cast<std::int32_t>(be32(p));
    p += 4;
    if (length < 0)
      throw UsageError(what + "'s column '" + column + "' holds an array with a NULL element (element " + std::to_string(i + 1) +
                           ") in row " + std::to_string(row),
                       "replace NULL elements in the query, e.g. array_replace(" + column + ", NULL, 0)");
    if (end - p < length) throw std::runtime_error("an array cut short");
    out.push_back(static_cast<float>(element_of(element, p, length)));
    p += length;
  }
  return static_cast<std::size_t>(count);
}

NumberDecoder fixed_decoder(std::uint32_t type, std::int32_t* length) {
  switch (type) {
    case oid::kFloat4:
      *length = 4;
      return [](const char* p) -> double {
        const auto bits = be32(p);
        float v;
        std::memcpy(&v, &bits, 4);
        return v;
      };
    case oid::kFloat8:
      *length = 8;
      return [](const char* p) {
        const auto bits = be64(p);
        double v;
        std::memcpy(&v, &bits, 8);
        return v;
      };
    case oid::kInt2:
      *length = 2;
      return [](const char* p) -> double { return static_cast<std::int16_t>(be16(p)); };
    case oid::kInt4:
      *length = 4;
      return [](const char* p) -> double { return static_cast<std::int32_t>(be32(p)); };
    case oid::kInt8:
      *length = 8;
      return [](const char* p) -> double { return static_cast<double>(static_cast<std::int64_t>(be64(p))); };
    case oid::kBool:
      *length = 1;
      return [](const char* p) -> double { return p[0] != 0 ? 1.0 : 0.0; };
    default:
      return nullptr;
  }
}

std::uint64_t tuple_fingerprint(const std::vector<Field>& fields) {
  // FNV-1a's step over 8-byte words (a byte at a time took 15 % of a load's CPU), then the tail.
  std::uint64_t h = 14695981039346656037ULL;
  const auto mix = [&h](std::uint64_t word) {
    h = (h ^ word) * 1099511628211ULL;
    h ^= h >> 29;
  };
  for (const auto& f : fields) {
    mix(static_cast<std::uint32_t>(f.length));
    if (f.length <= 0) continue;
    const auto n = static_cast<std::size_t>(f.length);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t word;
      std::memcpy(&word, f.data + i, 8);
      mix(word);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, f.data + i, n - i);
    mix(tail ^ (static_cast<std::uint64_t>(n - i) << 56));
  }
  // splitmix64's finaliser: a sum of raw values would let rows cancel out.
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace gputrain::data::postgres
