#pragma once
// A counting wrapper around LibTorch's CPU allocator. It gives the CPU what the CUDA caching
// allocator already has: allocated and peak figures for the memory model, and an optional cap
// beyond which allocation raises the same typed c10::OutOfMemoryError a GPU raises. The cap lets
// a user plan for a smaller machine, and makes the OOM path testable on a CI box without a GPU.

#include <cstdint>

namespace gputrain::memory {

/// Bytes held by CPU tensors allocated since the counting allocator was installed.
struct CpuMemoryStats {
  std::uint64_t allocated = 0;
  std::uint64_t peak = 0;      ///< highest `allocated` since install or reset_cpu_peak()
  std::uint64_t cap = 0;       ///< 0: no cap
  std::uint64_t refused = 0;   ///< allocations refused by the cap
};

/// Makes the counting allocator LibTorch's CPU allocator (idempotent, thread-safe). Tensors
/// allocated before stay uncounted; call it before building data and model.
void install_counting_cpu_allocator();

/// Caps what CPU tensors may hold in total; 0 removes the cap. Installs the allocator if needed.
void set_cpu_memory_cap(std::uint64_t bytes);

/// The current figures (all zero before install).
CpuMemoryStats cpu_memory_stats();

/// Starts a new peak from the current `allocated`.
void reset_cpu_peak();

}  // namespace gputrain::memory
