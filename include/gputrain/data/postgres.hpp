#pragma once
// What the PostgreSQL source offers beyond data::open_sources: the server's own throughput for a
// query, the ceiling `gputrain profile` holds the load against.

#include <cstdint>

#include "gputrain/data/sources.hpp"

namespace gputrain::data {

struct CopyThroughput {
  std::int64_t rows = 0;
  std::uint64_t bytes = 0;  ///< of the binary COPY stream
  double seconds = 0;
};

/// `COPY (spec.query) TO STDOUT (FORMAT binary)` over one connection, its rows counted and thrown
/// away: what the server and the socket deliver, with no decoding. Throws as open_sources does;
/// EnvironmentError in a build without PostgreSQL support.
CopyThroughput raw_copy_throughput(const SourceSpec& spec);

}  // namespace gputrain::data
