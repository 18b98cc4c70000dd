#include "gputrain/dist/launcher.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <utility>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"

namespace gputrain::dist {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

volatile sig_atomic_t g_signals = 0;
void count_signal(int) { g_signals = g_signals + 1; }

// A started process and what it has said so far.
struct Child {
  pid_t pid = -1;
  int fd = -1;            // its stdout and stderr, merged
  int rank = -1;          // -1: mpirun, whose output is tagged per rank
  bool running = true;
  int status = 0;         // from waitpid
  std::string partial;    // an unfinished last line
};

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exit code " + std::to_string(WEXITSTATUS(status));
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 1; }

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const auto end = dirs.find(':', start);
    const auto dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const auto candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

// fork + exec with `env` added; the child gets its own process group, so a terminal's Ctrl-C
// reaches the launcher only, which forwards it as it sees fit. A launcher killed outright (SIGKILL
// from a CI job's timeout, the OOM killer) forwards nothing: the kernel sends the child
// `death_signal` then, which stops the ranks as a SIGTERM would (a checkpoint, exit 130) instead
// of leaving them to train on unwatched.
Child spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env, int rank,
            int death_signal) {
  int fds[2];
  if (pipe(fds) != 0) throw EnvironmentError(std::string("cannot create a pipe: ") + std::strerror(errno), "");
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw EnvironmentError(std::string("cannot start a rank: fork: ") + std::strerror(errno), "");
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, death_signal);
    if (getppid() != launcher) _exit(130);  // it died before the line above
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    // Nothing else of the launcher's: not the other ranks' pipes, nor a file or pipe it holds
    // (a rank's leftover child would keep it open: a caller waiting for its end would wait too).
    close_range(3, ~0U, 0);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    const std::string message = "cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, message.data(), message.size());
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);  // drained without blocking
  Child child;
  child.pid = pid;
  child.fd = fds[0];
  child.rank = rank;
  return child;
}

// The processes mpirun started (its children), to signal them without mpirun's own handling,
// which would kill the job rather than let the ranks checkpoint.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const auto close_paren = text.rfind(')');
    if (close_paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(text.c_str() + close_paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent) out.push_back(std::stoi(name));
  }
  return out;
}

// mpirun's own lines that say nothing the launcher's report does not: the banner of MPI_Abort
// (which a failed rank calls on purpose to end the job) and the errors of its help system when
// several ranks abort at once. They are still read for the report (parse_mpirun_failure).
class MpirunNoise {
 public:
  /// The lines to show for mpirun's `line`: a rule of dashes is held back until the next line says
  /// whether it opens the abort banner.
  std::vector<std::string> shown(const std::string& line) {
    if (in_abort_banner_) {
      in_abort_banner_ = !is_rule(line);
      return {};
    }
    if (line.rfind("MPI_ABORT was invoked on rank ", 0) == 0) {
      in_abort_banner_ = true;
      held_rule_.clear();
      return {};
    }
    auto out = rest();
    const bool help_error = line.find("ORTE_ERROR_LOG") != std::string::npos ||
                            line.find("has sent help message help-mpi-api.txt / mpi-abort") != std::string::npos ||
                            line.find("orte_base_help_aggregate") != std::string::npos;
    if (is_rule(line))
      held_rule_ = line;
    else if (!help_error)
      out.push_back(line);
    return out;
  }
  /// A rule still held back when mpirun's output ends.
  std::vector<std::string> rest() {
    if (held_rule_.empty()) return {};
    return {std::exchange(held_rule_, std::string())};
  }

 private:
  static bool is_rule(const std::string& line) { return line.size() > 20 && line.find_first_not_of('-') == std::string::npos; }

  bool in_abort_banner_ = false;
  std::string held_rule_;
};

class Watch {
 public:
  Watch(int ranks, int tail_lines)
      : tails_(static_cast<std::size_t>(ranks)), on_screen_at_(static_cast<std::size_t>(ranks), 0), tail_lines_(tail_lines) {}

  // One line of a rank's output. Every rank reads the same config and data, so a mistake in them
  // stops every rank with the same error: each error and fix line is shown once, by the first
  // rank to say it.
  void rank_line(int rank, const std::string& body) {
    const bool known = rank >= 0 && static_cast<std::size_t>(rank) < tails_.size();
    if (known) {
      auto& tail = tails_[static_cast<std::size_t>(rank)];
      tail.push_back(body);
      if (static_cast<int>(tail.size()) > tail_lines_) tail.pop_front();
    }
    // Once a rank has failed, the launcher's SIGTERM to the others makes each announce a stop
    // (core::kStopAnnouncement: a blank line, then its words): noise beside the failure, which is
    // what ends the job.
    static const std::string announcement(core::kStopAnnouncement + 1, sizeof core::kStopAnnouncement - 3);
    if (ending_after_failure_ && (body.empty() || body == announcement)) return;
    const bool error_line = body.rfind("error: ", 0) == 0 || body.rfind("  fix: ", 0) == 0;
    if (known && body.rfind("error: ", 0) == 0) error_ranks_[body].insert(rank);
    if (error_line) {
      if (const auto shown = errors_shown_.find(body); shown != errors_shown_.end()) {
        if (known) on_screen_at_[static_cast<std::size_t>(rank)] = shown->second;
        return;
      }
    }
    if (rank == 0)
      echo(body);
    else
      echo("[rank " + std::to_string(rank) + "] " + body);
    if (error_line) errors_shown_[body] = echoed_;
    if (known) on_screen_at_[static_cast<std::size_t>(rank)] = echoed_;
  }

  // One line from a child. mpirun's (--tag-output) puts "[1,R]<stderr>:" before every write of
  // rank R, so a line written in pieces carries several tags; a line without one is mpirun's own.
  void line(const Child& from, const std::string& text) {
    if (from.rank >= 0) return rank_line(from.rank, text);
    static const std::regex tag(R"(\[\d+,(\d+)\]<std(?:out|err)>:)");
    auto it = std::sregex_iterator(text.begin(), text.end(), tag);
    if (it == std::sregex_iterator()) {
      mpirun_text_ += text + "\n";
      for (const auto& shown : noise_.shown(text)) echo(shown);
      return;
    }
    int rank = last_rank_;
    std::size_t position = 0;
    for (; it != std::sregex_iterator(); ++it) {
      if (rank >= 0) pieces_[rank] += text.substr(position, static_cast<std::size_t>(it->position()) - position);
      rank = std::stoi((*it)[1]);
      position = static_cast<std::size_t>(it->position() + it->length());
    }
    pieces_[rank] += text.substr(position);
    last_rank_ = rank;
    rank_line(rank, pieces_[rank]);
    pieces_[rank].clear();
  }

  void drain(Child& c) {
    char buffer[8192];
    while (true) {
      if (c.fd < 0) return;
      const ssize_t n = read(c.fd, buffer, sizeof buffer);
      if (n == 0) {  // the child closed its end: it has exited or is about to
        close(c.fd);
        c.fd = -1;
        return;
      }
      if (n < 0) return;  // EAGAIN: nothing more for now
      c.partial.append(buffer, static_cast<std::size_t>(n));
      std::size_t start = 0, end;
      while ((end = c.partial.find('\n', start)) != std::string::npos) {
        line(c, c.partial.substr(start, end - start));
        start = end + 1;
      }
      c.partial.erase(0, start);
    }
  }

  void flush(Child& c) {
    if (!c.partial.empty()) line(c, c.partial);
    c.partial.clear();
    for (const auto& shown : noise_.rest()) echo(shown);
  }

  /// A rank failed and the launcher is stopping the others.
  void ending_after_failure() { ending_after_failure_ = true; }

  /// Whether every rank said the same error: a mistake in the config or data they share, not
  /// one rank's failure.
  bool every_rank_said_one_error() const {
    return std::any_of(error_ranks_.begin(), error_ranks_.end(), [&](const auto& said) { return said.second.size() == tails_.size(); });
  }

  const std::deque<std::string>& tail(int rank) const { return tails_.at(static_cast<std::size_t>(rank)); }
  const std::string& mpirun_text() const { return mpirun_text_; }
  /// Whether the console's last lines are `rank`'s last lines already: its tail would repeat them.
  bool last_on_screen(int rank) const {
    const auto at = on_screen_at_.at(static_cast<std::size_t>(rank));
    return at > 0 && at == echoed_;
  }

 private:
  void echo(const std::string& text) {
    std::cerr << text << "\n";
    ++echoed_;
  }

  std::vector<std::deque<std::string>> tails_;
  std::vector<std::size_t> on_screen_at_;            // per rank: the console line its last line is (or repeats)
  std::map<std::string, std::size_t> errors_shown_;  // error and fix lines on the console, and where
  std::map<std::string, std::set<int>> error_ranks_;  // each error line, and the ranks that said it
  std::size_t echoed_ = 0;                           // lines written to the console so far
  bool ending_after_failure_ = false;
  MpirunNoise noise_;
  int tail_lines_;
  std::string mpirun_text_;
  std::map<int, std::string> pieces_;  // a rank's line so far, when mpirun split it
  int last_rank_ = -1;
};

void signal_all(const std::vector<Child>& children, bool through_mpirun, int sig) {
  for (const auto& c : children) {
    if (!c.running) continue;
    if (through_mpirun && sig == SIGTERM) {
      for (pid_t rank : children_of(c.pid)) kill(rank, SIGTERM);
    } else {
      kill(c.pid, sig);
      if (sig == SIGKILL) kill(-c.pid, SIGKILL);  // the whole group: mpirun's ranks too
    }
  }
}

}  // namespace

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

int launch_local(const LaunchSpec& spec, std::ostream& report) {
  if (spec.ranks < 1) throw UsageError("--nproc-per-node must be at least 1", "");
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
    children.push_back(spawn(argv, {}, -1, SIGUSR1));
  } else {
    const int port = spec.master_port > 0 ? spec.master_port : free_local_port();
    for (int r = 0; r < spec.ranks; ++r)
      children.push_back(spawn(spec.command,
                               {{"RANK", std::to_string(r)},
                                {"LOCAL_RANK", std::to_string(r)},
                                {"WORLD_SIZE", std::to_string(spec.ranks)},
                                {"LOCAL_WORLD_SIZE", std::to_string(spec.ranks)},
                                {"MASTER_ADDR", "127.0.0.1"},
                                {"MASTER_PORT", std::to_string(port)}},
                               r, SIGTERM));
  }

  // Every stop signal (core::kStopSignals: a hang-up, a scheduler's SIGUSR1 warning) stops the
  // ranks as Ctrl-C does; the ranks have process groups of their own, so only the launcher gets
  // it. A console that is gone must not end the launcher (SIGPIPE) while the ranks save their
  // checkpoints.
  g_signals = 0;
  const auto restore = core::catch_stop_signals(count_signal, 0);

  Watch watch(spec.ranks, spec.tail_lines);
  int forwarded = 0;            // signals passed on so far
  int failed_rank = -1;         // the first rank that failed (direct launch)
  int failed_status = 0;
  bool stopping = false;
  Clock::time_point kill_at{};
  while (true) {
    std::vector<pollfd> fds;
    for (const auto& c : children)
      if (c.fd >= 0) fds.push_back({c.fd, POLLIN, 0});
    if (!fds.empty()) poll(fds.data(), fds.size(), 100);
    for (auto& c : children)
      if (c.fd >= 0) watch.drain(c);

    if (g_signals > forwarded) {
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
          failed_rank = c.rank;
          failed_status = status;
          stopping = true;
          kill_at = Clock::now() + std::chrono::milliseconds(static_cast<long>(spec.grace_seconds * 1000));
          watch.ending_after_failure();
          signal_all(children, false, SIGTERM);
        }
      } else {
        any_running = true;
      }
    }
    if (stopping && any_running && Clock::now() > kill_at) signal_all(children, false, SIGKILL);
    if (!any_running) break;
  }
  // What the ranks wrote last, up to EOF (bounded: a leftover grandchild may hold a pipe open).
  const auto drain_until = Clock::now() + std::chrono::seconds(2);
  for (auto& c : children) {
    while (c.fd >= 0 && Clock::now() < drain_until) {
      pollfd fd{c.fd, POLLIN, 0};
      poll(&fd, 1, 50);
      watch.drain(c);
    }
    watch.flush(c);
    if (c.fd >= 0) close(c.fd);
  }
  core::restore_actions(restore);

  auto show_tail = [&](int rank) {
    // On the console the rank's lines went to, lines that are the last ones there are right above.
    if (&report == &std::cerr && watch.last_on_screen(rank)) return;
    if (watch.tail(rank).empty()) {
      report << "rank " << rank << " wrote nothing before it ended (ranks other than 0 speak only on errors)\n";
      return;
    }
    report << "last lines of rank " << rank << ":\n";
    for (const auto& l : watch.tail(rank)) report << "  | " << l << "\n";
  };
  // Said in place of one rank's failure, which would read as a fault of that rank.
  const auto every_rank_failed = [&](int status) {
    report << "error: all " << spec.ranks << " ranks stopped on the error above (" << describe_status(status) << ")\n";
    return exit_code_of(status);
  };
  if (spec.through_mpirun) {
    const int status = children.front().status;
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 130)) return WEXITSTATUS(status);
    if (spec.ranks > 1 && watch.every_rank_said_one_error()) return every_rank_failed(status);
    int rank = -1;
    std::string how;
    if (parse_mpirun_failure(watch.mpirun_text(), rank, how) && rank >= 0 && rank < spec.ranks) {
      report << "error: rank " << rank << " of " << spec.ranks << " failed (" << how << "); mpirun stopped the others\n";
      show_tail(rank);
    } else {
      report << "error: the MPI job failed (mpirun " << describe_status(status) << ")\n";
    }
    return exit_code_of(status);
  }
  if (failed_rank >= 0 && spec.ranks > 1 && watch.every_rank_said_one_error()) return every_rank_failed(failed_status);
  if (failed_rank >= 0) {
    report << "error: rank " << failed_rank << " of " << spec.ranks << " failed (" << describe_status(failed_status)
           << "); the other ranks were stopped\n";
    show_tail(failed_rank);
    return exit_code_of(failed_status);
  }
  for (const auto& c : children)
    if (WEXITSTATUS(c.status) == 130) return 130;
  return 0;
}

}  // namespace gputrain::dist
