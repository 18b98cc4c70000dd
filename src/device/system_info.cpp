#include "gputrain/device/system_info.hpp"

#include <sched.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/resource_limit.hpp"

namespace gputrain::device {
namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "";
}

// /proc/meminfo lines look like "MemTotal:       24563316 kB".
std::uint64_t meminfo_bytes(const std::string& key) {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream fields(line.substr(key.size() + 1));
      std::uint64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

// CPUs in this thread's affinity mask; all online ones when it cannot be read.
int affinity_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return int(sysconf(_SC_NPROCESSORS_ONLN));
}

// The cgroup's memory limit, when it is tighter than the machine's RAM.
std::optional<std::uint64_t> tighter_limit(const CgroupLimits& cgroup, std::uint64_t ram_total) {
  if (cgroup.memory_limit && *cgroup.memory_limit < ram_total) return cgroup.memory_limit;
  return std::nullopt;
}

// `ulimit -v` less this process's mappings (/proc/self/statm's size: VmSize).
std::optional<std::uint64_t> address_space_left() {
  const auto limit = core::soft_limit(RLIMIT_AS);
  if (!limit) return std::nullopt;
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  statm >> pages;
  const std::uint64_t mapped = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return *limit > mapped ? *limit - mapped : 0;
}

}  // namespace

MemoryInfo read_memory_info() {
  MemoryInfo info;
  info.ram_total = meminfo_bytes("MemTotal");
  info.ram_available = meminfo_bytes("MemAvailable");
  info.memory_limit = tighter_limit(read_cgroup_limits(), info.ram_total);
  info.address_space_left = address_space_left();
  return info;
}

double host_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

double usable_cores(int affinity_cores, const std::optional<double>& cgroup_quota_cores) {
  double cores = affinity_cores;
  if (cgroup_quota_cores) cores = std::min(cores, *cgroup_quota_cores);
  return std::max(cores, 1.0);
}

double read_usable_cores() { return usable_cores(affinity_core_count(), read_cgroup_limits().cpu_quota_cores); }

std::optional<DiskSpace> disk_space(const std::filesystem::path& path) {
  struct statvfs stats {};
  if (statvfs(path.c_str(), &stats) != 0) return std::nullopt;
  return DiskSpace{std::uint64_t(stats.f_blocks) * stats.f_frsize, std::uint64_t(stats.f_bavail) * stats.f_frsize};
}

SystemInfo collect_system_info() {
  SystemInfo info;
  info.os = read_os_release();
  struct utsname names {};
  if (uname(&names) == 0) {
    info.kernel = names.release;
    info.architecture = names.machine;
  }
  info.cpu_model = cpu_model_name();
  info.logical_cores = int(sysconf(_SC_NPROCESSORS_ONLN));
  info.affinity_cores = affinity_core_count();
  info.cgroup = read_cgroup_limits();
  info.usable_cores = usable_cores(info.affinity_cores, info.cgroup.cpu_quota_cores);
  info.affinity_narrowed = info.affinity_cores < info.cgroup.cpuset_cores.value_or(info.logical_cores);
  info.ram_total = meminfo_bytes("MemTotal");
  info.ram_available = meminfo_bytes("MemAvailable");
  info.memory_limit = tighter_limit(info.cgroup, info.ram_total);
  info.address_space_limit = core::soft_limit(RLIMIT_AS);
  info.shm = disk_space("/dev/shm");
  info.container = detect_container();
  return info;
}

}  // namespace gputrain::device
