#include "rank_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gputrain/core/error.hpp"

namespace gputrain::dist {

namespace fs = std::filesystem;

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
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

Child spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env, int rank, int death_signal) {
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

}  // namespace gputrain::dist
