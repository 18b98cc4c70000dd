#pragma once
// Memory figures of one device as this process sees them, and the knobs that shape them: the
// peak counter, the allocator's cache, and a cap that makes a big device behave like a small one.

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace gputrain::memory {

/// Bytes of one device's memory, for this process.
struct MemoryFigures {
  std::uint64_t allocated = 0;  ///< held by live tensors
  std::uint64_t reserved = 0;   ///< allocated + the allocator's cache of freed blocks
  std::uint64_t peak = 0;       ///< highest `allocated` since the last reset_peak_memory()
  /// Highest `reserved` since the last reset_peak_memory(), on CUDA (0 on the CPU): what the
  /// caching allocator's memory fraction limits, its rounding and cached blocks included.
  std::uint64_t reserved_peak = 0;
  std::uint64_t limit = 0;   ///< what this process may hold in all (see limit_source)
  std::string limit_source;  ///< device.max_memory, free GPU memory, cgroup limit, available RAM
  /// What the limit leaves beside the live tensors (0 past it, or without a limit).
  std::uint64_t free() const { return limit > allocated ? limit - allocated : 0; }
};

/// The figures now. On the CPU they count tensors allocated after install_counting_cpu_allocator().
/// Without `with_limit`, `limit` stays 0 (it costs a driver call or reading /proc).
MemoryFigures memory_figures(c10::Device device, bool with_limit = true);

/// Starts a new peak from what is allocated now.
void reset_peak_memory(c10::Device device);

/// Hands the caching allocator's unused blocks back (to the driver on CUDA, to the C library on the CPU).
void release_cached_memory(c10::Device device);

/// Waits until the work queued on `device` has run (CUDA); nothing to wait for on the CPU.
void synchronize(c10::Device device);

/// Caps this process's memory on `device` (`device.max_memory`): on CUDA the caching allocator's
/// per-process memory fraction, on the CPU the counting allocator's cap. Both then raise
/// c10::OutOfMemoryError beyond it. 0 removes the cap. Throws UsageError for a cap above the
/// device's memory.
void cap_memory(c10::Device device, std::uint64_t bytes);

/// "allocated 1.20 GiB, reserved 1.50 GiB, peak 1.40 GiB; limit 8.00 GiB (device.max_memory)".
std::string describe(const MemoryFigures& figures);

/// How to give the process more of what its limit measures: device.max_memory when that is the
/// limit, the shell's `ulimit -v` or the container's memory when those are, else the memory
/// other processes hold. "" without a limit.
std::string more_memory_remedy(const MemoryFigures& figures);

}  // namespace gputrain::memory
