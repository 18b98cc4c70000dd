#pragma once
// dist::RankEnvironment: who this process is in a multi-process run, read from the variables the
// launcher set: torchrun (and our own launcher, which sets the same ones), SLURM's srun, or Open
// MPI's mpirun. No variables at all means a plain single-process run.

#include <functional>
#include <optional>
#include <string>

namespace gputrain::dist {

/// One rank's place in the run.
struct RankEnvironment {
  int rank = 0;        ///< 0 .. world_size-1; rank 0 writes logs, metrics and checkpoints
  int local_rank = 0;  ///< the rank on this node; picks the GPU (cuda:LOCAL_RANK)
  int world_size = 1;
  int local_world_size = 1;  ///< ranks on this node
  std::string master_addr;   ///< where rank 0's TCPStore listens (NCCL rendezvous); may be empty for MPI
  int master_port = 0;       ///< 0 when not given
  std::string launcher;      ///< "torchrun", "slurm" or "mpirun": whose variables these were
};

/// Looks a variable up; nullopt when unset. The default reads the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The process environment's lookup.
EnvLookup process_environment();

/// This process's rank environment, or nullopt when no launcher variables are set (a plain run).
/// The launcher that started the process wins over one around it, so variables are read in this
/// order: torchrun (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), then
/// Open MPI (OMPI_COMM_WORLD_RANK, _LOCAL_RANK, _SIZE, _LOCAL_SIZE), then srun (SLURM_PROCID,
/// SLURM_LOCALID, SLURM_STEP_NUM_TASKS, SLURM_STEP_TASKS_PER_NODE or SLURM_NTASKS_PER_NODE or
/// SLURM_TASKS_PER_NODE, the first host of SLURM_STEP_NODELIST or SLURM_JOB_NODELIST). A batch
/// script's SLURM variables without SLURM_STEP_NUM_TASKS are no rank: srun did not start it.
/// Partial or inconsistent variables (RANK without WORLD_SIZE, RANK >= WORLD_SIZE, a non-number)
/// throw UsageError naming the variable.
std::optional<RankEnvironment> read_rank_environment(const EnvLookup& lookup = process_environment());

/// The first host of a SLURM node list: "gpu[03-05,07],cpu1" -> "gpu03".
std::string first_slurm_host(const std::string& nodelist);

/// "rank 1 of 4 (local 1 of 2, from torchrun)".
std::string describe(const RankEnvironment& env);

}  // namespace gputrain::dist
