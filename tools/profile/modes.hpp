#pragma once
// The modes of `gputrain profile`, one file each; main.cpp parses the flags and picks one.

#include <cstdint>
#include <functional>
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
/// The schema name of the mode's --json document.
const char* json_schema(bool step_mode, bool memory_mode, bool batch_mode);

/// Runs `profile`; an error it throws is also printed on stdout as one JSON object (`schema`,
/// `error`, `fix`, `exit_code`), so a script reading --json always gets JSON, as from verify.
int with_json_errors(const char* schema, const std::function<int()>& profile);

int profile_batch(const train::Config& config, const train::RunDevice& run, const train::ProbeData& probe, bool exhaustive, bool json);

}  // namespace gputrain::tools::profile
