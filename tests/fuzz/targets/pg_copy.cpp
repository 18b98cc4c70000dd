// The binary COPY stream (COPY ... TO STDOUT (FORMAT binary)) as the server sends it, cut into
// pieces as libpq hands them over, and each field decoded as every type the reader takes: the
// numbers (numeric too), arrays, text. A stream that is not the format is refused with
// std::runtime_error, which the load turns into its error; anything else escaping is a finding.
#include <stdexcept>
#include <vector>

#include "data/postgres/pg_binary.hpp"
#include "fuzz_input.hpp"
#include "gputrain/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gputrain::data::postgres;
  gputrain::fuzz::expect_read_or_refusal("the binary COPY stream", [&] {
    try {
      std::vector<float> elements;
      TupleReader reader([&](const std::vector<Field>& fields) {
        for (const auto& field : fields) {
          if (field.null()) continue;
          for (const auto type : {oid::kBool, oid::kInt2, oid::kInt4, oid::kInt8, oid::kFloat4, oid::kFloat8, oid::kNumeric}) try {
              (void)number_of(type, field);
            } catch (const std::runtime_error&) {
            }
          try {
            elements.clear();
            (void)append_vector(field, elements, "data.query", "emb", 1);
          } catch (const gputrain::Error&) {
          } catch (const std::runtime_error&) {
          }
          (void)text_of(field);
        }
        (void)tuple_fingerprint(fields);
      });
      // The first byte sets the pieces' size, as libpq's buffers cut the stream anywhere.
      const std::size_t piece = size > 0 ? 1 + data[0] % 64 : 1;
      for (std::size_t at = 1; at < size; at += piece) reader.feed(reinterpret_cast<const char*>(data) + at, std::min(piece, size - at));
    } catch (const std::runtime_error& e) {
      throw gputrain::Error(std::string("not a binary COPY stream: ") + e.what(), "");
    }
  });
  return 0;
}
