#pragma once
// The modes of `gputrain profile`, one file each; main.cpp parses the flags and picks one.

#include <cstdint>
#include <string>
#include <vector>

#include "gputrain/train/batch_size.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/run_setup.hpp"

namespace gputrain::tools::profile {

/// The loader sweep's flags.
struct SweepFlags {
  bool json = false, csv = false;
  std::string plot;
  int repeats = 3, batches = 30;
  std::vector<int> workers;
};

/// Default mode: threads x pinning x prefetch x caches, the fastest marked (loader_mode.cpp).
/// data.source postgres: the load's rows/s and MB/s against the server's raw COPY of the query (stderr).
void report_postgres_load(const train::Config& config, const train::RunData& data);

int profile_loader(const train::Config& config, const train::RunDevice& run, const train::RunData& data, const SweepFlags& flags);
/// --memory: the memory model of one step (memory_modes.cpp).
int profile_memory(const train::Config& config, const train::RunDevice& run, const train::ProbeData& probe, std::uint64_t data_bytes,
                   bool json);
/// --batch: the micro-batch `batch_size: auto` would pick (memory_modes.cpp).
int profile_batch(const train::Config& config, const train::RunDevice& run, const train::ProbeData& probe, bool exhaustive, bool json);

}  // namespace gputrain::tools::profile
