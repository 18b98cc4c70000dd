// `gputrain profile` on data.source postgres: how fast the rows loaded, against what the server
// delivers for the same query over one connection with no decoding.
#include <iostream>

#include "gputrain/core/units.hpp"
#include "gputrain/data/postgres.hpp"
#include "modes.hpp"

namespace gputrain::tools::profile {

void report_postgres_load(const train::Config& config, const train::RunData& data) {
  data::SourceSpec spec;
  spec.dsn = config.data.dsn;
  spec.query = config.data.query;
  std::cerr << "timing the server's raw COPY of data.query (its rows read and thrown away)\n";
  const auto raw = data::raw_copy_throughput(spec);
  const auto rows = data.sources.train->size() + (config.data.val_query.empty() || !data.sources.val ? 0 : data.sources.val->size());
  const auto mb_per_s = [&](double seconds) { return core::format_fixed(static_cast<double>(raw.bytes) / 1e6 / seconds, 0) + " MB/s"; };
  const double load = data.read_seconds;
  std::cerr << "PostgreSQL load: " << core::counted(rows, "row") << " in " << core::format_fixed(load, 2) << " s ("
            << core::format_fixed(static_cast<double>(rows) / load, 0) << " rows/s"
            << (config.data.val_query.empty() ? ", " + mb_per_s(load) : "") << ", decoded into training memory)\n"
            << "raw COPY of data.query: " << core::counted(raw.rows, "row") << ", " << core::format_bytes(raw.bytes) << " in "
            << core::format_fixed(raw.seconds, 2) << " s (" << mb_per_s(raw.seconds) << ")\n";
  if (config.data.val_query.empty())
    std::cerr << "the load runs at " << core::format_fixed(100.0 * raw.seconds / load, 0) << " % of the raw COPY's throughput"
              << (data.sources.copy_streams > 1
                      ? " (the load read over " + std::to_string(data.sources.copy_streams) + " COPY streams, the raw COPY over one)"
                      : "")
              << "\n";
}

}  // namespace gputrain::tools::profile
