// system.*: CPU cores actually usable, memory, /dev/shm, free disk.
#include "check_sets.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::checks {
namespace {

using core::format_bytes;
using core::format_fixed;
using core::kGiB;

constexpr double kMinCores = 4;  // below: data loading starves even one GPU
constexpr std::uint64_t kWarnMemory = 8 * kGiB;
constexpr std::uint64_t kWarnShm = 1 * kGiB;  // Docker's default is 64 MiB
constexpr std::uint64_t kWarnDisk = 10 * kGiB;
constexpr std::uint64_t kFailDisk = 1 * kGiB;

Result check_cores(const Context& c) {
  const auto& s = c.system;
  std::string detail = format_fixed(s.usable_cores, 1) + " usable of " + std::to_string(s.logical_cores) + " logical cores (affinity " +
                       std::to_string(s.affinity_cores);
  detail += s.cgroup.cpu_quota_cores ? ", cgroup quota " + format_fixed(*s.cgroup.cpu_quota_cores, 2) + ")" : ", no cgroup quota)";
  std::vector<Figure> figures{{"usable_cores", s.usable_cores, "cores", {}}, {"logical_cores", double(s.logical_cores), "cores", {}}};
  if (s.usable_cores < kMinCores) {
    return warn(detail + "; data loading may starve the GPU",
                "give the job more CPUs (docker run --cpus=8, SLURM --cpus-per-task=8) or use the VRAM-cached dataset", figures);
  }
  return pass(detail, figures);
}

Result check_memory(const Context& c) {
  const auto& s = c.system;
  const std::uint64_t usable = s.memory_limit ? *s.memory_limit : s.ram_total;
  std::string detail = format_bytes(s.ram_total) + " RAM, " + format_bytes(s.ram_available) + " available";
  if (s.memory_limit) detail += ", cgroup limit " + format_bytes(*s.memory_limit);
  std::vector<Figure> figures{{"usable_memory", double(usable) / double(kGiB), "GiB", {}}};
  if (s.address_space_limit) {
    return warn(detail + "; this process may map at most " + format_bytes(*s.address_space_limit) +
                    " (the shell's `ulimit -v`): CUDA and LibTorch map much more address space than the memory they use, "
                    "so a run can fail to start or to allocate with RAM free",
                "start gputrain after `ulimit -v unlimited` (on Grid Engine, request memory with mem_free rather than h_vmem)", figures);
  }
  if (usable < kWarnMemory) {
    return warn(detail + "; under " + format_bytes(kWarnMemory) + " limits dataset caching and workers",
                "raise the container's memory limit (docker run --memory=32g) or use a bigger machine", figures);
  }
  return pass(detail, figures);
}

Result check_shm(const Context& c) {
  if (!c.system.shm) {
    return warn("/dev/shm is missing", "mount a tmpfs at /dev/shm (docker run --shm-size=8g, or --ipc=host)");
  }
  const auto& shm = *c.system.shm;
  const std::string detail = format_bytes(shm.total) + " total, " + format_bytes(shm.available) + " free";
  std::vector<Figure> figures{{"shm_total", double(shm.total) / double(kGiB), "GiB", {}}};
  if (shm.total < kWarnShm) {
    return warn(detail +
                    "; NCCL's ranks on one node exchange gradients here (and PyTorch's DataLoader workers their batches), and fail when it "
                    "is small",
                "docker run --shm-size=8g (or --ipc=host); in compose: `shm_size: 8gb`", figures);
  }
  return pass(detail, figures);
}

Result check_disk(const Context& c) {
  const auto space = device::disk_space(c.work_dir);
  if (!space) return skip("cannot read free space of " + c.work_dir);
  const std::string detail = format_bytes(space->available) + " free of " + format_bytes(space->total) + " at " + c.work_dir;
  std::vector<Figure> figures{{"disk_free", double(space->available) / double(kGiB), "GiB", {}}};
  const std::string remedy = "free space (checkpoints and logs are written here) or run from a larger volume";
  if (space->available < kFailDisk) return fail(detail, remedy, figures);
  if (space->available < kWarnDisk) return warn(detail, remedy, figures);
  return pass(detail, figures);
}

}  // namespace

std::vector<Check> system_checks() {
  return {
      {"system.cores", "system", "usable CPU cores", std::chrono::seconds(2), check_cores},
      {"system.memory", "system", "system memory", std::chrono::seconds(2), check_memory},
      {"system.shm", "system", "shared memory (/dev/shm)", std::chrono::seconds(2), check_shm},
      {"system.disk", "system", "free disk space", std::chrono::seconds(5), check_disk},
  };
}

}  // namespace gputrain::checks
