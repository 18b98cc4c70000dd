#include "launch_options.hpp"

#include "number_options.hpp"
#include "text_options.hpp"

#include <filesystem>
#include <iostream>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/gpu_info.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/dist/launcher.hpp"

namespace gputrain::tools {

void add_launch_options(CLI::App& app, LaunchFlags& flags) {
  const std::string group = "Starting ranks (docs/distributed.md)";
  app.add_option("--nproc-per-node", flags.nproc_per_node,
                 "start N ranks on this node and watch them (= --set distributed.nproc_per_node=N)")
      ->type_name("N")
      ->check(whole_number(1, 1024))
      ->group(group);
  app.add_option("--nnodes", flags.nnodes, "nodes that each run this command with --nproc-per-node (= distributed.nnodes)")
      ->type_name("N")
      ->check(whole_number(1, 100000))
      ->group(group);
  app.add_option("--node-rank", flags.node_rank, "this node's place, 0 .. nnodes-1 (= distributed.node_rank)")
      ->type_name("R")
      ->check(whole_number(0, 99999))
      ->group(group);
  app.add_option("--master-addr", flags.master_addr, "node 0's host, where every node's ranks meet (= distributed.master_addr)")
      ->type_name("HOST")
      ->check(required_value("node 0's host name or address, e.g. 10.0.0.1"))
      ->group(group);
  app.add_option("--master-port", flags.master_port, "the port there, the same on every node (= distributed.master_port)")
      ->type_name("PORT")
      ->check(whole_number(1, 65535))
      ->group(group);
}

void LaunchFlags::add_settings(train::ConfigSources& sources) const {
  const auto add = [&](const char* flag, const char* key, const std::string& value) { sources.flags.push_back({flag, key, {value}}); };
  if (nproc_per_node > 0) add("--nproc-per-node", "distributed.nproc_per_node", std::to_string(nproc_per_node));
  if (nnodes > 0) add("--nnodes", "distributed.nnodes", std::to_string(nnodes));
  if (node_rank >= 0) add("--node-rank", "distributed.node_rank", std::to_string(node_rank));
  if (!master_addr.empty()) add("--master-addr", "distributed.master_addr", master_addr);
  if (master_port > 0) add("--master-port", "distributed.master_port", std::to_string(master_port));
}

void refuse_configs_read_once(const std::vector<std::string>& files, const std::string& readers) {
  for (const auto& file : files) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) continue;
    throw UsageError("config file '" + file + "' is a pipe or a device, which gives its text once, and " + readers,
                     "save the config to a file and give that: your-command > run.yaml, then gputrain train run.yaml");
  }
}

int launch_ranks(const train::Config& config, int argc, char** argv) {
  const auto& d = config.distributed;
  dist::LaunchSpec spec;
  spec.ranks = static_cast<int>(d.nproc_per_node);
  spec.nodes = static_cast<int>(d.nnodes);
  spec.node_rank = static_cast<int>(d.node_rank);
  spec.master_addr = d.master_addr;
  spec.master_port = static_cast<int>(d.master_port);
  const bool gpus = config.device.name != "cpu" && !device::discover_gpus().gpus.empty();
  // A backend that cannot run here is refused once, before any rank starts.
  // Across nodes the ranks are started as torchrun starts them (mpirun spans nodes with a host file).
  const auto chosen =
      dist::choose_backend(d.backend, gpus ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU), spec.nodes > 1 ? "torchrun" : "");
  spec.through_mpirun = chosen == dist::Backend::mpi;
  spec.command.push_back(std::filesystem::read_symlink("/proc/self/exe").string());
  for (int i = 1; i < argc; ++i) spec.command.push_back(argv[i]);
  dist::check_launch(spec);
  std::cerr << "launching " << core::counted(spec.ranks, "rank")
            << (spec.through_mpirun             ? " on the CPU under mpirun (MPI)"
                : chosen == dist::Backend::gloo ? " on the CPU (Gloo)"
                                                : " on this node's GPUs (NCCL)");
  if (spec.nodes > 1)
    std::cerr << ": ranks " << spec.node_rank * spec.ranks << " to " << (spec.node_rank + 1) * spec.ranks - 1 << " of "
              << spec.nodes * spec.ranks << ", node " << spec.node_rank << " of " << spec.nodes << ", meeting at " << spec.master_addr
              << ":" << spec.master_port;
  std::cerr << "\n";
  return dist::launch_local(spec, std::cerr);
}

}  // namespace gputrain::tools
