#pragma once
// The CPU and memory limits a container or systemd slice puts on this process (cgroup v1 or v2).
// The host's core count and RAM overstate what a containerised job can use.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace gputrain::device {

/// Limits found along this process's cgroup path (the tightest of the path and its parents).
struct CgroupLimits {
  int version = 0;                            ///< 0: no cgroup found, 1 or 2
  std::string path;                           ///< the process's cgroup, as /proc/self/cgroup names it
  std::optional<double> cpu_quota_cores;      ///< quota / period, e.g. 2.5; nullopt when unlimited
  std::optional<std::uint64_t> memory_limit;  ///< bytes; nullopt when unlimited
  std::optional<int> cpuset_cores;            ///< CPUs of the cgroup's cpuset (cpuset.cpus.effective); nullopt when unknown
};

/// The CPUs a cpuset list names: "0-3,8,10-11" -> 7; nullopt when it is not such a list.
std::optional<int> cpu_list_count(const std::string& list);

/// Reads <root>/proc/self/cgroup and the limit files under <root>/sys/fs/cgroup.
/// `root` lets tests point at a fixture tree; it is "/" in real use.
CgroupLimits read_cgroup_limits(const std::filesystem::path& root = "/");

}  // namespace gputrain::device
