#include "gputrain/dist/rank_environment.hpp"

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "gputrain/core/env.hpp"
#include "gputrain/core/error.hpp"

namespace gputrain::dist {
namespace {

// The variable names one launcher uses, in RankEnvironment's order.
struct Scheme {
  std::string launcher, rank, local_rank, world_size, local_world_size;
};

int parse_count(const std::string& name, const std::string& value, int minimum) {
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || parsed < minimum || parsed > 1'000'000)
    throw UsageError(name + "='" + value + "' is not " + (minimum == 0 ? "a rank (an integer >= 0)" : "a size (an integer >= 1)"),
                     "fix or unset " + name + " (the launcher sets it: torchrun, srun, mpirun or gputrain train --nproc-per-node)");
  return static_cast<int>(parsed);
}

// SLURM_TASKS_PER_NODE is "2(x3),1": the first node's count is what this node has when tasks are
// spread evenly, which is the only layout a fixed GPU-per-rank mapping supports.
int slurm_tasks_on_first_node(const std::string& value) {
  const auto end = value.find_first_of("(,");
  return parse_count("SLURM_TASKS_PER_NODE", value.substr(0, end), 1);
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) { return core::env(name.c_str()); };
}

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry ends at a comma outside brackets.
  std::string first;
  int depth = 0;
  for (char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  const auto open = first.find('[');
  if (open == std::string::npos) return first;
  // "gpu[03-05,07]": the prefix and the first number of the range, zero padding kept.
  const std::string inside = first.substr(open + 1, first.find(']') - open - 1);
  const auto stop = inside.find_first_of("-,");
  return first.substr(0, open) + inside.substr(0, stop) + (first.find(']') + 1 < first.size() ? first.substr(first.find(']') + 1) : "");
}

std::optional<RankEnvironment> read_rank_environment(const EnvLookup& lookup) {
  // The launcher that started this process wins: its variables are this process's own, while
  // those of a launcher around it are inherited (torchrun or mpirun inside an sbatch script, whose
  // SLURM_PROCID and SLURM_NTASKS describe the job). SLURM's count only for what srun started:
  // SLURM_STEP_NUM_TASKS is srun's, and a batch script has SLURM_PROCID without it.
  const std::vector<Scheme> schemes = {
      {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"},
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS", ""},
  };
  for (const auto& s : schemes) {
    const auto rank = lookup(s.rank);
    const auto world = lookup(s.world_size);
    if (!rank && !world) continue;
    if (s.launcher == "slurm" && !world) continue;  // the batch script itself, not a task srun started
    if (!rank || !world) {
      const std::string& missing = rank ? s.world_size : s.rank;
      const std::string& present = rank ? s.rank : s.world_size;
      throw UsageError(present + " is set but " + missing + " is not: a " + s.launcher + " rank needs both",
                       "set both (" + s.rank + ", " + s.world_size +
                           ") or neither; launchers set them for you: torchrun, srun, "
                           "mpirun or gputrain train --nproc-per-node N");
    }
    RankEnvironment env;
    env.launcher = s.launcher;
    env.rank = parse_count(s.rank, *rank, 0);
    env.world_size = parse_count(s.world_size, *world, 1);
    if (env.rank >= env.world_size)
      throw UsageError(s.rank + "=" + *rank + " is not below " + s.world_size + "=" + *world, "ranks run from 0 to " + s.world_size + "-1");
    // A Kubeflow PyTorchJob pod sets RANK and WORLD_SIZE only: one process per pod.
    if (const auto local = lookup(s.local_rank)) env.local_rank = parse_count(s.local_rank, *local, 0);
    bool local_world_given = true;
    if (s.launcher == "slurm") {
      if (const auto step_per_node = lookup("SLURM_STEP_TASKS_PER_NODE")) {
        env.local_world_size = slurm_tasks_on_first_node(*step_per_node);
      } else if (const auto per_node = lookup("SLURM_NTASKS_PER_NODE")) {
        env.local_world_size = parse_count("SLURM_NTASKS_PER_NODE", *per_node, 1);
      } else if (const auto tasks = lookup("SLURM_TASKS_PER_NODE")) {
        env.local_world_size = slurm_tasks_on_first_node(*tasks);
      } else {
        local_world_given = false;
      }
    } else if (const auto local_world = lookup(s.local_world_size)) {
      env.local_world_size = parse_count(s.local_world_size, *local_world, 1);
    } else {
      local_world_given = false;
    }
    if (!local_world_given) env.local_world_size = env.local_rank + 1;  // at least this many here
    if (env.local_world_size > env.world_size)
      throw UsageError("the local world size (" + std::to_string(env.local_world_size) + ") is larger than the world size (" +
                           std::to_string(env.world_size) + ")",
                       "check the launcher's variables (" + s.world_size + ", " + s.local_rank + ")");
    if (env.local_rank >= env.local_world_size)
      throw UsageError(s.local_rank + "=" + std::to_string(env.local_rank) + " is not below the local world size " +
                           std::to_string(env.local_world_size),
                       "check the launcher's variables");
    env.master_addr = lookup("MASTER_ADDR").value_or("");
    if (env.master_addr.empty() && s.launcher == "slurm")
      env.master_addr = first_slurm_host(
          lookup("SLURM_STEP_NODELIST").value_or(lookup("SLURM_JOB_NODELIST").value_or(lookup("SLURM_NODELIST").value_or(""))));
    if (const auto port = lookup("MASTER_PORT")) {
      env.master_port = parse_count("MASTER_PORT", *port, 1);
      if (env.master_port > 65535) throw UsageError("MASTER_PORT=" + *port + " is not a TCP port", "use a free port in 1024-65535");
    }
    return env;
  }
  return std::nullopt;
}

std::string describe(const RankEnvironment& env) {
  return "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) + " (local " + std::to_string(env.local_rank) +
         " of " + std::to_string(env.local_world_size) + ", from " + env.launcher + ")";
}

}  // namespace gputrain::dist
