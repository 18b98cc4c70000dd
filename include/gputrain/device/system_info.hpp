#pragma once
// Facts about the host that decide how fast and how safely training can run on it.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "gputrain/device/cgroup.hpp"
#include "gputrain/device/container.hpp"
#include "gputrain/device/os_release.hpp"

namespace gputrain::device {

/// Space on one filesystem.
struct DiskSpace {
  std::uint64_t total = 0;
  std::uint64_t available = 0;  ///< what an unprivileged process can still write
};

/// RAM, the cgroup's memory limit and the address-space limit: all that memory sizing needs, read
/// without the rest of SystemInfo.
struct MemoryInfo {
  std::uint64_t ram_total = 0;                ///< MemTotal
  std::uint64_t ram_available = 0;            ///< MemAvailable
  std::optional<std::uint64_t> memory_limit;  ///< the cgroup limit when tighter than RAM
  /// Under the shell's `ulimit -v` (RLIMIT_AS; Grid Engine's h_vmem), when one is set: the limit less
  /// what this process maps now. An allocation past it fails whatever RAM is free.
  std::optional<std::uint64_t> address_space_left;
  /// What a process may still take: MemAvailable, within the cgroup limit and the address space left.
  std::uint64_t available() const {
    const auto within_cgroup = memory_limit ? std::min(ram_available, *memory_limit) : ram_available;
    return address_space_left ? std::min(within_cgroup, *address_space_left) : within_cgroup;
  }
  /// Whether the address-space limit, not RAM or the cgroup, bounds available().
  bool address_space_bound() const { return address_space_left && available() == *address_space_left; }
};

/// Reads MemoryInfo (/proc/meminfo and the cgroup's memory limit); never throws.
MemoryInfo read_memory_info();

/// This process's resident memory in bytes (/proc/self/statm); 0 where that cannot be read.
double host_rss_bytes();

/// OS, CPU, memory, shared memory and container facts of this machine.
struct SystemInfo {
  OsRelease os;
  std::string kernel;        ///< uname -r
  std::string architecture;  ///< uname -m
  std::string cpu_model;     ///< /proc/cpuinfo "model name"
  int logical_cores = 0;     ///< online CPUs of the host
  int affinity_cores = 0;    ///< CPUs in this process's affinity mask (taskset, cpusets)
  CgroupLimits cgroup;
  double usable_cores = 0;                           ///< min(affinity, cgroup quota): what workers can really use
  bool affinity_narrowed = false;                    ///< the affinity holds fewer CPUs than the cpuset (or host) allows: a
                                                     ///< launcher (mpirun, srun) or taskset bound this process to its own
  std::uint64_t ram_total = 0;                       ///< MemTotal
  std::uint64_t ram_available = 0;                   ///< MemAvailable
  std::optional<std::uint64_t> memory_limit;         ///< the cgroup limit when tighter than RAM
  std::optional<std::uint64_t> address_space_limit;  ///< `ulimit -v` (RLIMIT_AS), when one is set
  std::optional<DiskSpace> shm;                      ///< /dev/shm, where NCCL ranks on one node (and DataLoader workers) exchange data
  ContainerInfo container;
};

/// Gathers SystemInfo; never throws (a fact it cannot read stays empty/zero).
SystemInfo collect_system_info();

/// The cores a job can use: the affinity count, capped by the cgroup quota (never below 1).
double usable_cores(int affinity_cores, const std::optional<double>& cgroup_quota_cores);
/// SystemInfo::usable_cores of this process, read without the rest of SystemInfo.
double read_usable_cores();

/// Free and total space of the filesystem holding `path`, or nullopt if it cannot be read.
std::optional<DiskSpace> disk_space(const std::filesystem::path& path);

}  // namespace gputrain::device
