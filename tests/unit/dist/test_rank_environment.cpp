// Rank environments as torchrun, srun, mpirun and a Kubeflow PyTorchJob set them, and the
// mistakes a hand-written job script makes.
#include <gtest/gtest.h>

#include <map>

#include "gputrain/core/error.hpp"
#include "gputrain/dist/rank_environment.hpp"

using namespace gputrain;
using namespace gputrain::dist;

namespace {

EnvLookup vars(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(const std::map<std::string, std::string>& values) {
  try {
    read_rank_environment(vars(values));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Every field, each reported on its own when it differs.
void expect_environment(const std::optional<RankEnvironment>& got, const RankEnvironment& want) {
  ASSERT_TRUE(got);
  EXPECT_EQ(got->launcher, want.launcher);
  EXPECT_EQ(got->rank, want.rank);
  EXPECT_EQ(got->local_rank, want.local_rank);
  EXPECT_EQ(got->world_size, want.world_size);
  EXPECT_EQ(got->local_world_size, want.local_world_size);
  EXPECT_EQ(got->master_addr, want.master_addr);
  EXPECT_EQ(got->master_port, want.master_port);
}

}  // namespace

TEST(RankEnvironment, NoLauncherVariablesMeansAPlainRun) { EXPECT_FALSE(read_rank_environment(vars({{"PATH", "/bin"}}))); }

TEST(RankEnvironment, ReadsTorchrun) {
  const auto env = read_rank_environment(vars({{"RANK", "5"},
                                               {"LOCAL_RANK", "1"},
                                               {"WORLD_SIZE", "8"},
                                               {"LOCAL_WORLD_SIZE", "4"},
                                               {"MASTER_ADDR", "node0"},
                                               {"MASTER_PORT", "29501"}}));
  expect_environment(env, {5, 1, 8, 4, "node0", 29501, "torchrun"});
  EXPECT_EQ(describe(*env), "rank 5 of 8 (local 1 of 4, from torchrun)");
}

TEST(RankEnvironment, AKubeflowPodWithoutLocalRankIsOneProcessPerPod) {
  const auto env =
      read_rank_environment(vars({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"}}));
  ASSERT_TRUE(env);
  EXPECT_EQ(env->local_rank, 0);
  EXPECT_EQ(env->local_world_size, 1);
}

TEST(RankEnvironment, ReadsSlurmAndTakesTheFirstNodeAsMaster) {
  const auto env = read_rank_environment(vars({{"SLURM_PROCID", "3"},
                                               {"SLURM_LOCALID", "1"},
                                               {"SLURM_STEP_NUM_TASKS", "4"},
                                               {"SLURM_TASKS_PER_NODE", "2(x2)"},
                                               {"SLURM_JOB_NODELIST", "gpu[07-08]"}}));
  expect_environment(env, {3, 1, 4, 2, "gpu07", 0, "slurm"});
}

TEST(RankEnvironment, SlurmKeepsAnExplicitMasterAddress) {
  const auto env = read_rank_environment(vars({{"SLURM_PROCID", "0"},
                                               {"SLURM_LOCALID", "0"},
                                               {"SLURM_STEP_NUM_TASKS", "2"},
                                               {"SLURM_NTASKS_PER_NODE", "2"},
                                               {"SLURM_JOB_NODELIST", "a1,b2"},
                                               {"MASTER_ADDR", "10.0.0.5"},
                                               {"MASTER_PORT", "4000"}}));
  ASSERT_TRUE(env);
  EXPECT_EQ(env->master_addr, "10.0.0.5");
  EXPECT_EQ(env->master_port, 4000);
}

TEST(RankEnvironment, FirstSlurmHostHandlesRangesListsAndSuffixes) {
  EXPECT_EQ(first_slurm_host("node1"), "node1");
  EXPECT_EQ(first_slurm_host("node1,node2"), "node1");
  EXPECT_EQ(first_slurm_host("gpu[03-05,07],cpu1"), "gpu03");
  EXPECT_EQ(first_slurm_host("gpu[12,14]"), "gpu12");
  EXPECT_EQ(first_slurm_host("rack[1-2]-n"), "rack1-n");
}

TEST(RankEnvironment, ReadsOpenMpi) {
  const auto env = read_rank_environment(vars({{"OMPI_COMM_WORLD_RANK", "1"},
                                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                               {"OMPI_COMM_WORLD_SIZE", "2"},
                                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  expect_environment(env, {1, 1, 2, 2, "", 0, "mpirun"});  // MPI needs no master address
}

// srun's step, not the job: a step of 2 tasks in a job of 8 is a world of 2 on its own nodes.
TEST(RankEnvironment, SlurmReadsTheStepSrunStarted) {
  const auto env = read_rank_environment(vars({{"SLURM_PROCID", "1"},
                                               {"SLURM_LOCALID", "1"},
                                               {"SLURM_NTASKS", "8"},
                                               {"SLURM_STEP_NUM_TASKS", "2"},
                                               {"SLURM_TASKS_PER_NODE", "4(x2)"},
                                               {"SLURM_STEP_TASKS_PER_NODE", "2"},
                                               {"SLURM_JOB_NODELIST", "n[01-02]"},
                                               {"SLURM_STEP_NODELIST", "n02"}}));
  expect_environment(env, {1, 1, 2, 2, "n02", 0, "slurm"});
}

// A batch script has the job's SLURM_PROCID and SLURM_NTASKS, but srun did not start it: it is a
// plain run (or our launcher's, with --nproc-per-node), not rank 0 of ranks that never come.
TEST(RankEnvironment, ABatchScriptsSlurmVariablesAreNoRank) {
  EXPECT_FALSE(read_rank_environment(vars({{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}})));
}

// mpirun inside an sbatch script: the ranks inherit the job's SLURM variables (and, as Open MPI
// starts its daemons with srun, a step's), but mpirun started them: its variables win.
TEST(RankEnvironment, MpirunInsideASlurmJobWinsOverSlurm) {
  const auto env = read_rank_environment(vars({{"SLURM_PROCID", "0"},
                                               {"SLURM_STEP_NUM_TASKS", "1"},
                                               {"SLURM_NTASKS", "1"},
                                               {"OMPI_COMM_WORLD_RANK", "1"},
                                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                               {"OMPI_COMM_WORLD_SIZE", "2"},
                                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  expect_environment(env, {1, 1, 2, 2, "", 0, "mpirun"});
}

TEST(RankEnvironment, TorchrunInsideSrunWinsOverSlurm) {
  const auto env = read_rank_environment(vars({{"SLURM_PROCID", "0"},
                                               {"SLURM_STEP_NUM_TASKS", "1"},
                                               {"RANK", "1"},
                                               {"LOCAL_RANK", "1"},
                                               {"WORLD_SIZE", "2"},
                                               {"LOCAL_WORLD_SIZE", "2"},
                                               {"MASTER_ADDR", "127.0.0.1"},
                                               {"MASTER_PORT", "29500"}}));
  expect_environment(env, {1, 1, 2, 2, "127.0.0.1", 29500, "torchrun"});
}

TEST(RankEnvironment, TorchrunVariablesWinOverMpiOnes) {
  const auto env =
      read_rank_environment(vars({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  ASSERT_TRUE(env);
  EXPECT_EQ(env->launcher, "torchrun");
  EXPECT_EQ(env->world_size, 1);
}

TEST(RankEnvironment, PartialOrInconsistentVariablesAreClearErrors) {
  EXPECT_NE(error_of({{"RANK", "0"}}).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}}).find("WORLD_SIZE is set but RANK is not"), std::string::npos);
  EXPECT_NE(error_of({{"SLURM_STEP_NUM_TASKS", "2"}}).find("SLURM_STEP_NUM_TASKS is set but SLURM_PROCID is not"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("RANK=2 is not below WORLD_SIZE=2"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x' is not a rank"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE='0' is not a size"), std::string::npos);
  EXPECT_NE(
      error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}).find("LOCAL_RANK=2 is not below"),
      std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "4"}}).find("larger than the world size"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}).find("MASTER_PORT"), std::string::npos);
}
