// The local launcher with plain shell commands as ranks (the training ranks are tested under
// tests/dist), and reading Open MPI's own account of a failed job.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "dist/rank_output.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/dist/bus_bandwidth.hpp"
#include "gputrain/dist/launcher.hpp"

using namespace gputrain::dist;

namespace {

LaunchSpec shell_ranks(int ranks, const std::string& script) {
  LaunchSpec spec;
  spec.ranks = ranks;
  spec.command = {"/bin/sh", "-c", script};
  spec.grace_seconds = 5;
  return spec;
}

}  // namespace

TEST(Launcher, RanksGetTorchrunVariablesAndAllSucceeding) {
  std::ostringstream report;
  // Each rank checks its own variables; a wrong one fails the launch.
  const int code = launch_local(shell_ranks(3, R"(test "$WORLD_SIZE" = 3 && test "$LOCAL_WORLD_SIZE" = 3 &&
      test "$RANK" = "$LOCAL_RANK" && test "$MASTER_ADDR" = 127.0.0.1 && test "$MASTER_PORT" -gt 0)"),
                                report);
  EXPECT_EQ(code, 0) << report.str();
  EXPECT_TRUE(report.str().empty());
}

// Node 1 of 2, as torchrun --nnodes 2 --node-rank 1 starts it: its ranks are 2 and 3 of 4, meeting
// at node 0; our variables replace those the node's own launcher set (a pod's RANK counts pods).
TEST(Launcher, ANodesRanksAreNumberedAfterThoseOfTheNodesBeforeIt) {
  auto spec = shell_ranks(2, R"(test "$RANK" = $((2 + LOCAL_RANK)) && test "$WORLD_SIZE" = 4 && test "$LOCAL_WORLD_SIZE" = 2 &&
      test "$GROUP_RANK" = 1 && test "$MASTER_ADDR" = node0.cluster && test "$MASTER_PORT" = 29500 && test "$GPUTRAIN_LAUNCHED" = 1)");
  spec.nodes = 2;
  spec.node_rank = 1;
  spec.master_addr = "node0.cluster";
  spec.master_port = 29500;
  setenv("RANK", "1", 1);  // the pod's
  std::ostringstream report;
  const int code = launch_local(spec, report);
  unsetenv("RANK");
  EXPECT_EQ(code, 0) << report.str();
  // Ranks other than 0 say nothing unless they fail: the launcher says how they ended.
  EXPECT_EQ(report.str(), "ranks 2 to 3 of 4 finished; rank 0, on node 0, reports the run\n");

  // A failure names the rank in the run, not on the node.
  spec.command = {"/bin/sh", "-c", R"(if [ "$LOCAL_RANK" = 1 ]; then echo "boom"; exit 3; fi; exec sleep 60)"};
  std::ostringstream failed;
  testing::internal::CaptureStderr();
  EXPECT_EQ(launch_local(spec, failed), 3);
  const std::string console = testing::internal::GetCapturedStderr();
  EXPECT_NE(failed.str().find("rank 3 of 4 failed (exit code 3)"), std::string::npos) << failed.str();
  EXPECT_NE(console.find("[rank 3] boom"), std::string::npos) << console;
}

// What cannot start is refused before anything does, with the fix.
TEST(Launcher, SeveralNodesNeedWhereToMeetAndGpuRanks) {
  LaunchSpec spec = shell_ranks(2, "true");
  spec.nodes = 2;
  spec.node_rank = 1;
  EXPECT_THROW(check_launch(spec), gputrain::UsageError);  // no address or port
  spec.master_addr = "node0";
  spec.master_port = 29500;
  EXPECT_NO_THROW(check_launch(spec));
  spec.through_mpirun = true;
  EXPECT_THROW(check_launch(spec), gputrain::UsageError);
  spec.through_mpirun = false;
  spec.node_rank = 2;
  EXPECT_THROW(check_launch(spec), gputrain::UsageError);
}

// Who starts the ranks: this command, unless it is a rank itself or another launcher started it;
// a node's launcher (--nnodes > 1) starts them even where a pod's RANK and WORLD_SIZE are set.
TEST(Launcher, StartsRanksOnlyWhereNoOtherLauncherDid) {
  const auto env = [](std::map<std::string, std::string> vars) -> EnvLookup {
    return [vars](const std::string& name) -> std::optional<std::string> {
      const auto it = vars.find(name);
      return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  };
  const auto none = env({});
  const auto pod = env({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "23456"}});
  const auto ours = env({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"GPUTRAIN_LAUNCHED", "1"}});
  EXPECT_TRUE(starts_ranks_here(2, 1, none));
  EXPECT_FALSE(starts_ranks_here(0, 1, none));  // no --nproc-per-node: this process is the run
  EXPECT_FALSE(starts_ranks_here(2, 1, pod));   // torchrun or srun started it: --nproc-per-node is theirs
  EXPECT_TRUE(starts_ranks_here(8, 4, pod));    // a node's launcher in a pod
  EXPECT_FALSE(starts_ranks_here(8, 4, ours));  // one of the ranks it started
  // `srun gputrain train --nproc-per-node 2` in an `sbatch --ntasks=1` job: srun started one task,
  // so the 2 ranks asked for are ours to start (they were 1, silently).
  const auto one_task = env({{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_NTASKS", "1"}});
  EXPECT_TRUE(starts_ranks_here(2, 1, one_task));
  // The batch script itself (no srun): the job's variables are no rank environment.
  EXPECT_TRUE(starts_ranks_here(2, 1, env({{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}})));
  // srun started 4 tasks: --nproc-per-node is srun's.
  EXPECT_FALSE(starts_ranks_here(2, 1, env({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "4"}})));
}

TEST(Launcher, AFailedRankStopsTheOthersAndIsNamedWithItsLastLines) {
  std::ostringstream report;
  const auto start = std::chrono::steady_clock::now();
  const int code = launch_local(
      shell_ranks(3, R"(if [ "$RANK" = 1 ]; then echo "loading data"; echo "boom: disk full"; exit 3; fi; exec sleep 60)"), report);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(code, 3);
  EXPECT_LT(seconds, 5.0) << "the sleeping ranks were not stopped at once";
  EXPECT_NE(report.str().find("rank 1 of 3 failed (exit code 3)"), std::string::npos) << report.str();
  EXPECT_NE(report.str().find("| boom: disk full"), std::string::npos) << report.str();
}

// A rank gets stdout and stderr from the launcher and no other of its descriptors: a pipe the
// launcher holds, kept open by a rank's leftover child, would keep whoever reads it waiting.
TEST(Launcher, RanksInheritNoDescriptorButTheirOutput) {
  const int held = open("/dev/null", O_RDONLY);  // no O_CLOEXEC, as a library's files may be
  ASSERT_GE(held, 3);
  std::ostringstream report;
  const int code = launch_local(shell_ranks(2, "test ! -e /proc/$$/fd/" + std::to_string(held)), report);
  close(held);
  EXPECT_EQ(code, 0) << report.str();
}

// A mistake in the config or data stops every rank with the same words: the console shows them
// once, by the first rank to say them, and other lines as each rank says them. (The ranks ignore
// the launcher's SIGTERM, and fail once all of them have started, so that each says all it has to.)
TEST(Launcher, AnErrorEveryRankSaysIsShownOnce) {
  std::ostringstream report;
  testing::internal::CaptureStderr();
  const int code = launch_local(
      shell_ranks(
          3,
          R"(trap '' TERM; echo "reading rank $RANK"; sleep 0.3; echo "error: 'x.csv' does not exist"; echo "  fix: check data.path"; exit 2)"),
      report);
  const std::string console = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  const auto count = [&](const std::string& text) {
    std::size_t n = 0;
    for (auto at = console.find(text); at != std::string::npos; at = console.find(text, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("error: 'x.csv' does not exist"), 1u) << console;
  EXPECT_EQ(count("fix: check data.path"), 1u) << console;
  EXPECT_EQ(count("reading rank "), 3u) << console;
  // No rank is to blame: the end says they all stopped on it, and shows no rank's last lines.
  EXPECT_EQ(report.str(), "error: all 3 ranks stopped on the error above (exit code 2)\n");
}

// An error only some ranks say is theirs: the first to fail is named, with its last lines.
TEST(Launcher, AnErrorOnlySomeRanksSayNamesTheRankThatFailed) {
  std::ostringstream report;
  testing::internal::CaptureStderr();
  const int code =
      launch_local(shell_ranks(3, R"(if [ "$RANK" = 2 ]; then exec sleep 60; fi; sleep 0.3; echo "error: out of disk"; exit 2)"), report);
  (void)testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_NE(report.str().find(" of 3 failed (exit code 2); the other ranks were stopped"), std::string::npos) << report.str();
  EXPECT_EQ(report.str().find("all 3 ranks"), std::string::npos) << report.str();
}

// The others, stopped because one failed, announce a stop as a training rank does on SIGTERM:
// the console leaves that out, the failure is the news.
TEST(Launcher, TheOthersStopAnnouncementsAfterAFailureAreLeftOut) {
  std::ostringstream report;
  testing::internal::CaptureStderr();
  const int code = launch_local(shell_ranks(2, R"sh(if [ "$RANK" = 0 ]; then sleep 0.3; echo "error: out of disk"; exit 1; fi;
          trap 'printf "\ngputrain: stopping after the current step and saving a checkpoint (signal again to quit now)\n"; exit 130' TERM;
          sleep 60 & wait)sh"),
                                report);
  const std::string console = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 1);
  EXPECT_NE(console.find("error: out of disk"), std::string::npos) << console;
  EXPECT_EQ(console.find("stopping after the current step"), std::string::npos) << console;
  EXPECT_EQ(console.find("[rank 1] \n"), std::string::npos) << console;
}

// A rank still in its set-up when another fails is stopped there and says "interrupted while
// ..., nothing to resume": the other's error is the news, and under mpirun it can reach the
// console after it. Shown only when no rank failed (something else stopped that rank).
TEST(Launcher, AnotherRanksFailureStopsASetUpThatSaysNothingOfIt) {
  const std::string interrupted =
      R"sh(trap 'echo "error: interrupted while labelling the validation set (3 of 64 samples), before any training step: nothing to resume";
           echo "  fix: run the same command again to start over"; exit 130' TERM; sleep 60 & wait)sh";
  std::ostringstream report;
  testing::internal::CaptureStderr();
  const int code = launch_local(
      shell_ranks(2, R"sh(if [ "$RANK" = 0 ]; then sleep 0.3; echo "error: out of disk"; exit 2; fi; )sh" + interrupted), report);
  const std::string console = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_NE(console.find("error: out of disk"), std::string::npos) << console;
  EXPECT_EQ(console.find("interrupted while"), std::string::npos) << console;
  EXPECT_EQ(console.find("start over"), std::string::npos) << console;
  EXPECT_NE(report.str().find("rank 0 of 2 failed (exit code 2)"), std::string::npos) << report.str();

  // No rank failed: the stop was the news, and is shown.
  testing::internal::CaptureStderr();
  const int stopped = launch_local(
      shell_ranks(
          2,
          R"sh(if [ "$RANK" = 1 ]; then echo "error: interrupted while reading the data (1 of 2 files), before any training step: nothing to resume"; echo "  fix: run it again"; exit 130; fi; exit 0)sh"),
      report);
  const std::string shown = testing::internal::GetCapturedStderr();
  EXPECT_EQ(stopped, 130);
  EXPECT_NE(shown.find("[rank 1] error: interrupted while reading the data"), std::string::npos) << shown;
  EXPECT_NE(shown.find("[rank 1]   fix: run it again"), std::string::npos) << shown;
}

TEST(Launcher, ARankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  std::ostringstream report;
  // Rank 0 fails once rank 1 has had time to ignore SIGTERM, so only the SIGKILL can end rank 1.
  auto spec = shell_ranks(2, R"(if [ "$RANK" = 0 ]; then sleep 0.3; exit 1; fi; trap '' TERM; sleep 60 & wait; sleep 60)");
  spec.grace_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const int code = launch_local(spec, report);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(code, 1);
  EXPECT_GE(seconds, 0.3 + 0.5) << "rank 1 ended before the grace period: it was not the SIGKILL";
  EXPECT_LT(seconds, 10.0);
  EXPECT_NE(report.str().find("rank 0 of 2 failed (exit code 1)"), std::string::npos) << report.str();
}

TEST(Launcher, ARankKilledBySignalIsNamed) {
  std::ostringstream report;
  const int code = launch_local(shell_ranks(2, R"(if [ "$RANK" = 1 ]; then kill -9 $$; fi; exec sleep 60)"), report);
  EXPECT_EQ(code, 1);
  EXPECT_NE(report.str().find("rank 1 of 2 failed (killed by signal 9"), std::string::npos) << report.str();
}

TEST(Launcher, StoppedRanksExit130AndSoDoesTheLaunch) {
  std::ostringstream report;
  EXPECT_EQ(launch_local(shell_ranks(2, "exit 130"), report), 130);
}

TEST(Launcher, ReadsOpenMpisAccountOfAFailedJob) {
  int rank = -1;
  std::string how;
  ASSERT_TRUE(parse_mpirun_failure("MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\nwith errorcode 3.\n", rank, how));
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(how, "exit code 3");
  ASSERT_TRUE(parse_mpirun_failure("mpirun noticed that process rank 0 with PID 0 on node vm exited on signal 9 (Killed).", rank, how));
  EXPECT_EQ(rank, 0);
  EXPECT_NE(how.find("killed by signal 9"), std::string::npos);
  ASSERT_TRUE(parse_mpirun_failure("The first process to do so was:\n\n  Process name: [[18766,1],1]\n  Exit code:    2\n", rank, how));
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(how, "exit code 2");
  EXPECT_FALSE(parse_mpirun_failure("all good", rank, how));
}

// After a clean Ctrl-C every rank exits 130, and mpirun says so in two banners; the launcher has
// said it already (interrupted, the checkpoint, how to resume): they are left out, other lines kept.
TEST(Launcher, MpirunsBannersOnHowTheJobEndedAreLeftOut) {
  const std::string rule(74, '-');
  const std::vector<std::string> mpirun = {rule,
                                           "Primary job  terminated normally, but 1 process returned",
                                           "a non-zero exit code. Per user-direction, the job has been aborted.",
                                           rule,
                                           rule,
                                           "mpirun detected that one or more processes exited with non-zero status, thus causing",
                                           "the job to be terminated. The first process to do so was:",
                                           "",
                                           "  Process name: [[6431,1],1]",
                                           "  Exit code:    130",
                                           rule,
                                           rule,
                                           "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).",
                                           rule,
                                           "a line of mpirun's own that is news"};
  MpirunNoise noise;
  std::vector<std::string> shown;
  for (const auto& line : mpirun)
    for (const auto& l : noise.shown(line)) shown.push_back(l);
  for (const auto& l : noise.rest()) shown.push_back(l);
  EXPECT_EQ(shown, std::vector<std::string>{"a line of mpirun's own that is news"});
}

TEST(Launcher, FreePortIsAUsablePortNumber) {
  const int port = free_local_port();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

TEST(BusBandwidth, IsAlgorithmBandwidthTimesTwoNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(all_reduce_bus_bandwidth(100.0, 2), 100.0);
  EXPECT_DOUBLE_EQ(all_reduce_bus_bandwidth(100.0, 8), 175.0);
  EXPECT_DOUBLE_EQ(all_reduce_bus_bandwidth(100.0, 1), 0.0);
}

namespace {

// The launcher's exit code when `sig` reaches it while two ranks run; each rank exits 130 on
// SIGTERM, as a training rank does after its checkpoint.
int launch_exit_after(int sig) {
  std::ostringstream report;
  auto spec = shell_ranks(2, R"(trap 'exit 130' TERM; echo ready; while true; do sleep 0.05; done)");
  std::thread signaller([sig] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(getpid(), sig);  // the launcher's handler counts it; the process lives on
  });
  const int code = launch_local(spec, report);
  signaller.join();
  return code;
}

}  // namespace

TEST(Launcher, SigtermToTheLauncherIsForwardedToEveryRank) { EXPECT_EQ(launch_exit_after(SIGTERM), 130); }

// The ranks have process groups of their own, so a closed terminal or ssh session reaches the
// launcher alone: it must stop them as SIGTERM does (they save a checkpoint), not die and leave them.
TEST(Launcher, AHangUpStopsEveryRankAsSigtermDoes) { EXPECT_EQ(launch_exit_after(SIGHUP), 130); }

// SLURM's `--signal=USR1@120` (and Grid Engine's -notify) warn the job step before its time limit;
// the launcher must pass that on as a stop, not die of SIGUSR1's default action and leave the ranks.
TEST(Launcher, ASchedulerWarningSignalStopsEveryRankAsSigtermDoes) {
  EXPECT_EQ(launch_exit_after(SIGUSR1), 130);
  EXPECT_EQ(launch_exit_after(SIGUSR2), 130);
}

// A launcher killed outright (a CI job's timeout, the OOM killer) cannot pass anything on: the
// kernel must stop its ranks instead (as SIGTERM does: they save a checkpoint), not leave them to
// train on with nobody watching.
TEST(Launcher, RanksOfALauncherKilledOutrightAreStoppedAsBySigterm) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gputrain-launcher-killed-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string d = dir.string();
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {  // the launcher, in a process of its own so that it can be killed
    std::ostringstream report;
    _exit(launch_local(shell_ranks(2, "trap 'touch " + d + "/stopped$RANK; exit 130' TERM; echo $$ > " + d +
                                          "/ready$RANK; while true; do sleep 0.05; done"),
                       report));
  }
  const auto wait_for = [&](const std::string& name) {
    for (int i = 0; i < 200; ++i) {
      if (fs::exists(dir / (name + "0")) && fs::exists(dir / (name + "1"))) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  const bool ready = wait_for("ready");
  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);
  EXPECT_TRUE(ready) << "the ranks did not start within 10 s";
  const bool stopped = wait_for("stopped");
  EXPECT_TRUE(stopped) << "the ranks got no SIGTERM within 10 s of their launcher's death";
  if (!stopped)  // not left behind by the test either
    for (const char* rank : {"0", "1"}) {
      std::ifstream pid_file(dir / ("ready" + std::string(rank)));
      pid_t pid = 0;
      if (pid_file >> pid && pid > 0) kill(pid, SIGKILL);
    }
  fs::remove_all(dir);
}
