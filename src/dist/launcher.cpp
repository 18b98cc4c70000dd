#include "gputrain/dist/launcher.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <regex>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "rank_output.hpp"
#include "rank_process.hpp"

namespace gputrain::dist {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_signals = 0;
void count_signal(int) { g_signals = g_signals + 1; }

}  // namespace

bool starts_ranks_here(int nproc_per_node, int nnodes, const EnvLookup& env) {
  if (nproc_per_node <= 0 || env(kLaunchedVariable)) return false;
  // A launcher around this process that started it alone (srun in `sbatch --ntasks=1`, torchrun
  // with one process) leaves the N ranks asked for to ours.
  const auto around = read_rank_environment(env);
  return nnodes > 1 || !around || around->world_size == 1;
}

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw EnvironmentError(std::string("cannot open a socket: ") + std::strerror(errno), "");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  if (!ok) throw EnvironmentError("cannot find a free TCP port on 127.0.0.1", "set distributed.master_port to a free port");
  return ntohs(address.sin_port);
}

bool parse_mpirun_failure(const std::string& text, int& rank, std::string& how) {
  std::smatch m;
  static const std::regex aborted(R"(MPI_ABORT was invoked on rank (\d+)[^\n]*\n?[^\n]*?with errorcode (\d+))");
  static const std::regex signalled(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+))");
  static const std::regex exited(R"(Process name: \[\[\d+,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(\d+))");
  if (std::regex_search(text, m, aborted)) {
    rank = std::stoi(m[1]);
    how = "exit code " + m[2].str();
    return true;
  }
  if (std::regex_search(text, m, signalled)) {
    rank = std::stoi(m[1]);
    const int sig = std::stoi(m[2]);
    how = "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    return true;
  }
  if (std::regex_search(text, m, exited)) {
    rank = std::stoi(m[1]);
    how = "exit code " + m[2].str();
    return true;
  }
  return false;
}

void check_launch(const LaunchSpec& spec) {
  if (spec.ranks < 1) throw UsageError("--nproc-per-node must be at least 1", "");
  if (spec.nodes < 1 || spec.node_rank < 0 || spec.node_rank >= spec.nodes)
    throw UsageError("--node-rank " + std::to_string(spec.node_rank) + " is not one of the " + std::to_string(spec.nodes) +
                         " nodes' (0 .. " + std::to_string(spec.nodes - 1) + ")",
                     "give each node its own --node-rank, from 0");
  if (spec.nodes > 1 && spec.through_mpirun)
    throw UsageError("CPU ranks on several nodes are mpirun's to start, not --nnodes'",
                     "mpirun -np N --hostfile HOSTS gputrain train ... --set device=cpu");
  if (spec.nodes > 1 && (spec.master_addr.empty() || spec.master_port == 0))
    throw UsageError("ranks on several nodes meet at node 0: --master-addr and --master-port must name it",
                     "give every node the same --master-addr (node 0's host) and --master-port (e.g. 29500)");
}

namespace {

// The ranks of this node: one mpirun for CPU ranks, or one process per rank with torchrun's variables.
std::vector<Child> start_ranks(const LaunchSpec& spec, int first_rank, int world_size) {
  std::vector<Child> children;
  if (spec.through_mpirun) {
    const auto mpirun = find_in_path("mpirun");
    if (mpirun.empty())
      throw EnvironmentError("CPU ranks run under Open MPI, but mpirun is not on the PATH",
                             "apt-get install openmpi-bin (scripts/bootstrap.sh does), or train on GPUs (NCCL)");
    std::vector<std::string> argv = {mpirun, "-np", std::to_string(spec.ranks), "--oversubscribe", "--tag-output",
                                     // containers often forbid the cross-memory attach Open MPI tries first
                                     "--mca", "btl_vader_single_copy_mechanism", "none"};
    if (geteuid() == 0) argv.push_back("--allow-run-as-root");
    argv.insert(argv.end(), spec.command.begin(), spec.command.end());
    // mpirun ends the job on SIGTERM with SIGKILL close behind, too soon for a checkpoint; it
    // passes SIGUSR1 on to the ranks, which stop on it as on SIGTERM.
    children.push_back(spawn(argv, {{kLaunchedVariable, "1"}}, -1, SIGUSR1));
  } else {
    const int port = spec.master_port > 0 ? spec.master_port : free_local_port();
    // torchrun's variables; ours set over any the node's own launcher left (a pod's RANK counts pods).
    for (int r = 0; r < spec.ranks; ++r)
      children.push_back(spawn(spec.command,
                               {{"RANK", std::to_string(first_rank + r)},
                                {"LOCAL_RANK", std::to_string(r)},
                                {"GROUP_RANK", std::to_string(spec.node_rank)},
                                {"WORLD_SIZE", std::to_string(world_size)},
                                {"LOCAL_WORLD_SIZE", std::to_string(spec.ranks)},
                                {"MASTER_ADDR", spec.master_addr.empty() ? "127.0.0.1" : spec.master_addr},
                                {"MASTER_PORT", std::to_string(port)},
                                {kLaunchedVariable, "1"}},
                               r, SIGTERM));
  }
  return children;
}

// How the ranks ended: the first rank that failed (a direct launch), and how.
struct Ending {
  int failed_rank = -1;
  int failed_status = 0;
};

// Passes the console's stop signals on, shows the ranks' output, and when one rank fails stops
// the others (SIGTERM, then SIGKILL after the grace period); returns once every rank has ended.
Ending watch_ranks(std::vector<Child>& children, const LaunchSpec& spec, RankOutput& output) {
  Ending ending;
  int forwarded = 0;  // signals passed on so far
  bool stopping = false;
  Clock::time_point kill_at{};
  while (true) {
    std::vector<pollfd> fds;
    for (const auto& c : children)
      if (c.fd >= 0) fds.push_back({c.fd, POLLIN, 0});
    if (!fds.empty()) poll(fds.data(), fds.size(), 100);
    for (auto& c : children)
      if (c.fd >= 0) output.drain(c);

    if (g_signals > forwarded) {
      output.user_stopped();
      // First: SIGTERM, every rank checkpoints at the next step and exits 130. Again: kill.
      signal_all(children, spec.through_mpirun, forwarded == 0 ? SIGTERM : SIGKILL);
      forwarded = g_signals;
    }
    bool any_running = false;
    for (auto& c : children) {
      if (!c.running) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.running = false;
        c.status = status;
        const bool ok = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 130);
        if (!ok && !stopping && c.rank >= 0) {
          ending.failed_rank = c.rank;
          ending.failed_status = status;
          stopping = true;
          kill_at = Clock::now() + std::chrono::milliseconds(static_cast<long>(spec.grace_seconds * 1000));
          output.ending_after_failure();
          signal_all(children, false, SIGTERM);
        }
      } else {
        any_running = true;
      }
    }
    if (stopping && any_running && Clock::now() > kill_at) signal_all(children, false, SIGKILL);
    if (!any_running) break;
  }
  return ending;
}

// What the ranks wrote last, up to EOF (bounded: a leftover grandchild may hold a pipe open).
void drain_ranks(std::vector<Child>& children, RankOutput& output) {
  const auto drain_until = Clock::now() + std::chrono::seconds(2);
  for (auto& c : children) {
    while (c.fd >= 0 && Clock::now() < drain_until) {
      pollfd fd{c.fd, POLLIN, 0};
      poll(&fd, 1, 50);
      output.drain(c);
    }
    output.flush(c);
    if (c.fd >= 0) close(c.fd);
  }
}

// What the launcher says of the ranks' end, and its exit code.
int report_ending(const LaunchSpec& spec, const std::vector<Child>& children, const RankOutput& output, const Ending& ending,
                  std::ostream& report) {
  const int first_rank = spec.node_rank * spec.ranks, world_size = spec.nodes * spec.ranks;
  const int failed_rank = ending.failed_rank, failed_status = ending.failed_status;
  // `local`: the rank's place on this node; people read its rank in the run.
  auto show_tail = [&](int local) {
    // On the console the rank's lines went to, lines that are the last ones there are right above.
    if (&report == &std::cerr && output.last_on_screen(local)) return;
    const int rank = first_rank + local;
    if (output.tail(local).empty()) {
      report << "rank " << rank << " wrote nothing before it ended (ranks other than 0 speak only on errors)\n";
      return;
    }
    report << "last lines of rank " << rank << ":\n";
    for (const auto& l : output.tail(local)) report << "  | " << l << "\n";
  };
  // Said in place of one rank's failure, which would read as a fault of that rank.
  const auto every_rank_failed = [&](int status) {
    report << "error: all " << spec.ranks << " ranks" << (spec.nodes > 1 ? " of this node" : "") << " stopped on the error above ("
           << describe_status(status) << ")\n";
    return exit_code_of(status);
  };
  if (spec.through_mpirun) {
    const int status = children.front().status;
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 130)) return WEXITSTATUS(status);
    if (spec.ranks > 1 && output.every_rank_said_one_error()) return every_rank_failed(status);
    int rank = -1;
    std::string how;
    if (parse_mpirun_failure(output.mpirun_text(), rank, how) && rank >= 0 && rank < spec.ranks) {
      report << "error: rank " << rank << " of " << spec.ranks << " failed (" << how << "); mpirun stopped the others\n";
      show_tail(rank);
    } else {
      report << "error: the MPI job failed (mpirun " << describe_status(status) << ")\n";
    }
    return exit_code_of(status);
  }
  if (failed_rank >= 0 && spec.ranks > 1 && output.every_rank_said_one_error()) return every_rank_failed(failed_status);
  if (failed_rank >= 0) {
    report << "error: rank " << first_rank + failed_rank << " of " << world_size << " failed (" << describe_status(failed_status)
           << "); the other ranks were stopped\n";
    show_tail(failed_rank);
    return exit_code_of(failed_status);
  }
  const bool stopped = std::any_of(children.begin(), children.end(), [](const Child& c) { return WEXITSTATUS(c.status) == 130; });
  // Ranks other than 0 speak only on errors: on another node than rank 0's, a pod's log would end
  // with the launching line alone.
  if (spec.nodes > 1 && first_rank > 0)
    report << "ranks " << first_rank << " to " << first_rank + spec.ranks - 1 << " of " << world_size
           << (stopped ? " stopped" : " finished") << "; rank 0, on node 0, reports the run\n";
  return stopped ? 130 : 0;
}

}  // namespace

int launch_local(const LaunchSpec& spec, std::ostream& report) {
  check_launch(spec);
  const int first_rank = spec.node_rank * spec.ranks, world_size = spec.nodes * spec.ranks;
  auto children = start_ranks(spec, first_rank, world_size);
  // Every stop signal (core::kStopSignals: a hang-up, a scheduler's SIGUSR1 warning) stops the
  // ranks as Ctrl-C does; the ranks have process groups of their own, so only the launcher gets
  // it. A console that is gone must not end the launcher (SIGPIPE) while the ranks save their
  // checkpoints.
  g_signals = 0;
  const auto restore = core::catch_stop_signals(count_signal, 0);
  RankOutput output(spec.ranks, spec.tail_lines, first_rank);
  const auto ending = watch_ranks(children, spec, output);
  drain_ranks(children, output);
  output.finish(std::any_of(children.begin(), children.end(), [](const Child& c) {
    return !WIFEXITED(c.status) || (WEXITSTATUS(c.status) != 0 && WEXITSTATUS(c.status) != 130);
  }));
  core::restore_actions(restore);
  return report_ending(spec, children, output, ending, report);
}

}  // namespace gputrain::dist
