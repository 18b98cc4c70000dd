#pragma once
// A counting, caching wrapper around LibTorch's CPU allocator. It gives the CPU what the CUDA
// caching allocator already has: allocated and peak figures for the memory model; an optional cap
// beyond which allocation raises the same typed c10::OutOfMemoryError a GPU raises (to plan for a
// smaller machine, and to test the OOM path on a CI box without a GPU); and a cache of freed
// blocks, so a training step reuses last step's memory instead of faulting fresh pages in
// (docs/memory.md, "The CPU block cache").

#include <cstdint>

namespace gputrain::memory {

/// Bytes held by CPU tensors allocated since the counting allocator was installed.
struct CpuMemoryStats {
  std::uint64_t allocated = 0;
  std::uint64_t peak = 0;    ///< highest `allocated` since install or reset_cpu_peak()
  std::uint64_t cached = 0;  ///< freed blocks kept for reuse (not in `allocated`)
  std::uint64_t cache_bound =
      0;                      ///< allocated + cached stay under this: the cap, else 90 % of the memory available at install (0: unknown)
  std::uint64_t cap = 0;      ///< 0: no cap
  std::uint64_t refused = 0;  ///< allocations refused by the cap
  std::uint64_t resident_limit = 0;  ///< set_cpu_resident_limit's (0: none)
};

/// Makes the counting allocator LibTorch's CPU allocator (idempotent, thread-safe). Tensors
/// allocated before stay uncounted; call it before building data and model. The block cache is
/// on unless the environment has GPUTRAIN_CPU_CACHE=0.
void install_counting_cpu_allocator();

/// Caps what CPU tensors may hold in total; 0 removes the cap. Installs the allocator if needed.
/// Cached blocks are given back before live tensors plus cache would pass the cap.
void set_cpu_memory_cap(std::uint64_t bytes);

/// While `bytes` is nonzero, CPU allocations are refused with c10::OutOfMemoryError once the
/// process's resident memory (/proc/self/statm, read at each allocation of 1 MiB or more and every
/// 256th other) has passed it; 0 lifts it. For a model's build, whose module objects the count of
/// tensor bytes does not see.
void set_cpu_resident_limit(std::uint64_t bytes);

/// set_cpu_resident_limit() to what the process holds now plus 90 % of the RAM free (the rest for
/// the page cache and the other processes); returns that growth, or 0 (and sets nothing) where
/// the system does not say.
std::uint64_t hold_to_free_ram();

/// Turns the block cache on or off (off also empties it). For memory debuggers, which cannot see
/// a use after free into a block the cache handed out again.
void enable_cpu_block_cache(bool enabled);

/// Frees every cached block; returns the bytes given back.
std::uint64_t release_cpu_cache();

/// The current figures (all zero before install).
CpuMemoryStats cpu_memory_stats();

/// Starts a new peak from the current `allocated`.
void reset_cpu_peak();

}  // namespace gputrain::memory
