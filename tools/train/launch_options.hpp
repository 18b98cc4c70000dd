#pragma once
// `gputrain train`'s launcher: the flags that start ranks (--nproc-per-node, and across nodes
// --nnodes, --node-rank, --master-addr, --master-port, as torchrun names them) and the launch.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::tools {

/// The launcher flags as given; each is the twin of a distributed.* key.
struct LaunchFlags {
  int nproc_per_node = 0;
  int nnodes = 0;
  int node_rank = -1;
  std::string master_addr;
  int master_port = 0;

  /// Whether any was given.
  bool any() const { return nproc_per_node > 0 || nnodes > 0 || node_rank >= 0 || !master_addr.empty() || master_port > 0; }
  /// Each flag given, as the key it sets (after the files and --set).
  void add_settings(train::ConfigSources& sources) const;
};

/// Declares the flags on `app`, in a group of their own.
void add_launch_options(CLI::App& app, LaunchFlags& flags);

/// Throws UsageError when a config file of `files` is no regular file (a pipe: `<(command)`, a
/// here-document, /dev/stdin) while other processes read the config again (`readers`, e.g. "each of
/// the 4 ranks reads the config itself"): the first would take its text, the others an empty file.
void refuse_configs_read_once(const std::vector<std::string>& files, const std::string& readers);

/// Starts this node's distributed.nproc_per_node ranks of this very command and watches them: GPU
/// ranks meet over NCCL (one GPU each), CPU ranks run under mpirun. Returns the exit code.
int launch_ranks(const train::Config& config, int argc, char** argv);

}  // namespace gputrain::tools
