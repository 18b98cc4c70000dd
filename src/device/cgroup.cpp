#include "gputrain/device/cgroup.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace gputrain::device {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

std::optional<long long> parse_integer(const std::string& text) {
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == 0) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void keep_smaller(std::optional<double>& current, double candidate) { current = current ? std::min(*current, candidate) : candidate; }
void keep_smaller(std::optional<std::uint64_t>& current, std::uint64_t candidate) {
  current = current ? std::min(*current, candidate) : candidate;
}

// The process's cgroup dir and its ancestors up to (and including) the mount root. Inside a
// container with its own cgroup namespace the path may not exist under the mount: then the mount
// root is the container's own cgroup.
std::vector<fs::path> cgroup_chain(const fs::path& mount, const std::string& cgroup_path) {
  std::vector<fs::path> chain;
  fs::path relative = fs::path(cgroup_path).relative_path();
  std::error_code ec;
  if (!fs::is_directory(mount / relative, ec)) relative.clear();
  for (fs::path dir = relative;; dir = dir.parent_path()) {
    chain.push_back(mount / dir);
    if (dir.empty() || dir == dir.parent_path()) break;
  }
  return chain;
}

// The CPUs of the nearest cpuset along the chain (a launcher or taskset may narrow a process's
// affinity below them; a container's cpuset narrows them for every process in it).
void read_cpuset(const std::vector<fs::path>& chain, const char* file, CgroupLimits& limits) {
  for (const auto& dir : chain)
    if (const auto line = read_first_line(dir / file))
      if (const auto count = cpu_list_count(*line)) {
        limits.cpuset_cores = *count;
        return;
      }
}

// cgroup v2: cpu.max holds "max 100000" or "<quota> <period>"; memory.max holds "max" or bytes.
void read_v2(const fs::path& mount, CgroupLimits& limits) {
  const auto chain = cgroup_chain(mount, limits.path);
  read_cpuset(chain, "cpuset.cpus.effective", limits);
  for (const auto& dir : chain) {
    if (auto line = read_first_line(dir / "cpu.max")) {
      std::istringstream fields(*line);
      std::string quota, period;
      fields >> quota >> period;
      const auto q = parse_integer(quota);
      const auto p = parse_integer(period);
      if (quota != "max" && q && p && *q > 0 && *p > 0) keep_smaller(limits.cpu_quota_cores, double(*q) / double(*p));
    }
    if (auto line = read_first_line(dir / "memory.max")) {
      if (*line != "max") {
        if (auto bytes = parse_integer(*line); bytes && *bytes > 0) keep_smaller(limits.memory_limit, std::uint64_t(*bytes));
      }
    }
  }
}

// cgroup v1: cpu.cfs_quota_us (-1 = unlimited) over cpu.cfs_period_us; memory.limit_in_bytes,
// where "unlimited" is a huge page-aligned number (LONG_MAX rounded down).
void read_v1(const fs::path& root, const std::string& cpu_path, const std::string& memory_path, const std::string& cpuset_path,
             CgroupLimits& limits) {
  constexpr std::uint64_t kUnlimitedAbove = 1ULL << 62;
  for (const char* name : {"cpu,cpuacct", "cpu", "cpuacct,cpu"}) {
    const fs::path mount = root / "sys/fs/cgroup" / name;
    std::error_code ec;
    if (!fs::is_directory(mount, ec) || cpu_path.empty()) continue;
    for (const auto& dir : cgroup_chain(mount, cpu_path)) {
      const auto quota = read_first_line(dir / "cpu.cfs_quota_us");
      const auto period = read_first_line(dir / "cpu.cfs_period_us");
      if (!quota || !period) continue;
      const auto q = parse_integer(*quota);
      const auto p = parse_integer(*period);
      if (q && p && *q > 0 && *p > 0) keep_smaller(limits.cpu_quota_cores, double(*q) / double(*p));
    }
    break;
  }
  const fs::path cpuset_mount = root / "sys/fs/cgroup/cpuset";
  std::error_code ec;
  if (!cpuset_path.empty() && fs::is_directory(cpuset_mount, ec))
    read_cpuset(cgroup_chain(cpuset_mount, cpuset_path), "cpuset.effective_cpus", limits);
  const fs::path memory_mount = root / "sys/fs/cgroup/memory";
  if (!memory_path.empty() && fs::is_directory(memory_mount, ec)) {
    for (const auto& dir : cgroup_chain(memory_mount, memory_path)) {
      if (auto line = read_first_line(dir / "memory.limit_in_bytes")) {
        if (auto bytes = parse_integer(*line); bytes && *bytes > 0 && std::uint64_t(*bytes) < kUnlimitedAbove) {
          keep_smaller(limits.memory_limit, std::uint64_t(*bytes));
        }
      }
    }
  }
}

bool has_controller(const std::string& list, const std::string& wanted) {
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == wanted) return true;
  }
  return false;
}

}  // namespace

std::optional<int> cpu_list_count(const std::string& list) {
  int count = 0;
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto dash = item.find('-');
    const auto first = parse_integer(item.substr(0, dash));
    const auto last = dash == std::string::npos ? first : parse_integer(item.substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    count += static_cast<int>(*last - *first + 1);
  }
  return count > 0 ? std::optional<int>(count) : std::nullopt;
}

CgroupLimits read_cgroup_limits(const fs::path& root) {
  CgroupLimits limits;
  std::ifstream self(root / "proc/self/cgroup");
  if (!self) return limits;

  // Lines are "<id>:<controllers>:<path>"; v2 has the single line "0::<path>".
  std::string line, v2_path, cpu_path, memory_path, cpuset_path;
  bool v2 = false;
  while (std::getline(self, line)) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) {
      v2 = true;
      v2_path = path;
    }
    if (has_controller(controllers, "cpu")) cpu_path = path;
    if (has_controller(controllers, "memory")) memory_path = path;
    if (has_controller(controllers, "cpuset")) cpuset_path = path;
  }

  std::error_code ec;
  const bool v2_mounted = fs::exists(root / "sys/fs/cgroup/cgroup.controllers", ec);
  if (!cpu_path.empty() || !memory_path.empty()) {
    limits.version = 1;  // hybrid hosts list v1 controllers and a "0::" line: the controllers win
    limits.path = !cpu_path.empty() ? cpu_path : memory_path;
    read_v1(root, cpu_path, memory_path, cpuset_path, limits);
  } else if (v2 && v2_mounted) {
    limits.version = 2;
    limits.path = v2_path;
    read_v2(root / "sys/fs/cgroup", limits);
  }
  return limits;
}

}  // namespace gputrain::device
