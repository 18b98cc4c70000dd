#include "gputrain/memory/cpu_allocator.hpp"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "block_cache.hpp"
#include "gputrain/core/env.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/system_info.hpp"

namespace gputrain::memory {
namespace {

// glibc's first mmap threshold: smaller blocks come from its heap, which reuses them without
// faulting pages in, so caching them would only hold memory back.
constexpr std::uint64_t kSmallestCachedBlock = 128 * core::kKiB;

std::atomic<std::uint64_t> g_allocated{0}, g_peak{0}, g_cap{0}, g_refused{0}, g_cached{0};
// The most ever held live (never reset): the cache's size limit. A loop that frees a step's
// activations and asks for them again needs no more than that back.
std::atomic<std::uint64_t> g_high_water{0};
std::atomic<bool> g_cache_enabled{true};
// Without a cap, tensors and cache together stay under 90 % of the memory available at install:
// the cache must never be what pushes a process sized near the machine's memory (batch_size: auto
// on a CPU) into the kernel's OOM killer. 0: unknown, no bound.
std::atomic<std::uint64_t> g_uncapped_bound{0};

// While nonzero (a model's build), an allocation is refused where the process's resident memory
// has passed it: what the count misses (module objects, the heap's small blocks) counts there.
// Read at each allocation of 1 MiB or more and every 256th of the others: /proc/self/statm takes
// microseconds, a small allocation less.
std::atomic<std::uint64_t> g_resident_limit{0}, g_allocations{0};
constexpr std::uint64_t kResidentCheckEvery = 256, kResidentCheckBytes = core::kMiB;

// Each live allocation, keyed by its context: the size to give back and the wrapped allocator's
// deleter. A side table rather than a wrapping context keeps "simple" data pointers (data ==
// context) simple, so raw_allocate() callers inside LibTorch keep working.
struct Allocation {
  std::uint64_t bytes;
  void* data;
  c10::DeleterFnPtr inner_deleter;
};

// Guards the table and the cache. Both outlive static destructors: tensors may be freed that late.
std::mutex g_mutex;
std::unordered_map<void*, Allocation>& table() {
  static auto* live = new std::unordered_map<void*, Allocation>();
  return *live;
}
BlockCache& cache() {
  static auto* blocks = new BlockCache();
  return *blocks;
}

void free_blocks(const std::vector<BlockCache::Block>& blocks) {
  for (const auto& block : blocks) block.deleter(block.context);
}

bool cacheable(std::uint64_t bytes, c10::DeleterFnPtr deleter) {
  // No deleter: the memory belongs to someone else, never ours to hand out again.
  return bytes >= kSmallestCachedBlock && deleter != nullptr && g_cache_enabled.load(std::memory_order_relaxed);
}

// What tensors and cache together may hold: the cap, else the uncapped bound (0: no bound).
std::uint64_t footprint_bound() {
  const std::uint64_t cap = g_cap.load(std::memory_order_relaxed);
  return cap != 0 ? cap : g_uncapped_bound.load(std::memory_order_relaxed);
}

// How much the cache may hold with `live` bytes in tensors: the high-water mark, within the bound.
std::uint64_t cache_limit(std::uint64_t live) {
  std::uint64_t limit = g_high_water.load(std::memory_order_relaxed);
  if (const std::uint64_t bound = footprint_bound(); bound != 0) limit = std::min(limit, bound > live ? bound - live : 0);
  return limit;
}

// Under g_mutex, after every change to the cache: its size for cpu_memory_stats(), read without the lock.
void publish_cache_size_locked() { g_cached.store(cache().bytes(), std::memory_order_relaxed); }

// Under g_mutex: trims the cache to `limit`.
std::vector<BlockCache::Block> shrink_cache_locked(std::uint64_t limit) {
  auto out = cache().shrink_to(limit);
  publish_cache_size_locked();
  return out;
}

void delete_counted(void* context) {
  Allocation allocation{};
  std::vector<BlockCache::Block> pushed_out;
  bool kept = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = table().find(context);
    if (it == table().end()) return;  // cannot happen: every context we hand out is in the table
    allocation = it->second;
    table().erase(it);
    const std::uint64_t live = g_allocated.fetch_sub(allocation.bytes, std::memory_order_relaxed) - allocation.bytes;
    if (cacheable(allocation.bytes, allocation.inner_deleter)) {
      pushed_out = cache().keep({allocation.data, context, allocation.inner_deleter, allocation.bytes}, cache_limit(live));
      publish_cache_size_locked();
      kept = true;
    }
  }
  if (!kept && allocation.inner_deleter) allocation.inner_deleter(context);
  free_blocks(pushed_out);
}

void raise_to(std::atomic<std::uint64_t>& mark, std::uint64_t now) {
  std::uint64_t seen = mark.load(std::memory_order_relaxed);
  while (now > seen && !mark.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

// The peak and the high-water mark, once an allocation of `now` bytes in all is granted.
void raise_peaks(std::uint64_t now) {
  raise_to(g_peak, now);
  raise_to(g_high_water, now);
}

class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) override {
    const std::uint64_t bytes = n;
    const std::uint64_t now = count_within_cap(bytes);
    if (bytes >= kSmallestCachedBlock && g_cache_enabled.load(std::memory_order_relaxed))
      if (auto cached = take_cached(bytes, now)) {
        raise_peaks(now);
        return std::move(*cached);
      }
    check_resident(bytes);  // a new block only: a cached one is in RAM already
    raise_peaks(now);
    c10::DataPtr inner;
    try {
      inner = allocate_inner(n);
    } catch (...) {
      g_allocated.fetch_sub(bytes, std::memory_order_relaxed);
      throw;
    }
    if (inner.get_context() == nullptr) {  // zero bytes: nothing to count, and no key to count it by
      g_allocated.fetch_sub(bytes, std::memory_order_relaxed);
      return inner;
    }
    void* data = inner.get();
    const c10::Device device = inner.device();
    const c10::DeleterFnPtr inner_deleter = inner.get_deleter();
    void* context = inner.release_context();
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      table()[context] = Allocation{bytes, data, inner_deleter};
    }
    return {data, context, &delete_counted, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &delete_counted; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { inner_->copy_data(dest, src, count); }

 private:
  // Counts `bytes` in, or refuses them past the cap; returns the bytes allocated with them.
  static std::uint64_t count_within_cap(std::uint64_t bytes) {
    const std::uint64_t cap = g_cap.load(std::memory_order_relaxed);
    const std::uint64_t now = g_allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (cap != 0 && now > cap) {
      g_allocated.fetch_sub(bytes, std::memory_order_relaxed);
      g_refused.fetch_add(1, std::memory_order_relaxed);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", core::format_bytes(bytes), "; ",
                       core::format_bytes(now - bytes), " already allocated under a cap of ", core::format_bytes(cap),
                       " (device.max_memory)");
    }
    return now;
  }

  // A cached block of the size, or none; on a miss, makes room in the cache for a new block.
  static std::optional<c10::DataPtr> take_cached(std::uint64_t bytes, std::uint64_t now) {
    std::vector<BlockCache::Block> pushed_out;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (const auto block = cache().take(bytes)) {
        publish_cache_size_locked();
        table()[block->context] = Allocation{bytes, block->data, block->deleter};
        return c10::DataPtr{block->data, block->context, &delete_counted, c10::Device(c10::kCPU)};
      }
      // A new block: live tensors and cache together stay within the bound (the cap, as reserved
      // GPU memory does). Only under memory pressure: in a steady loop a miss is a size seen for
      // the first time, and pushing out other blocks then would only make them miss next.
      if (const std::uint64_t bound = footprint_bound(); bound != 0 && now + cache().bytes() > bound)
        pushed_out = shrink_cache_locked(bound > now ? bound - now : 0);
    }
    free_blocks(pushed_out);
    return std::nullopt;
  }

  // Under a resident limit, a new block that would take the process's RAM past it is refused
  // (uncounted again), after the cache has given its blocks back.
  static void check_resident(std::uint64_t bytes) {
    const std::uint64_t limit = g_resident_limit.load(std::memory_order_relaxed);
    if (limit == 0 || (bytes < kResidentCheckBytes && g_allocations.fetch_add(1, std::memory_order_relaxed) % kResidentCheckEvery != 0))
      return;
    auto resident = static_cast<std::uint64_t>(device::host_rss_bytes());
    if (resident + bytes > limit && release_cpu_cache() != 0) resident = static_cast<std::uint64_t>(device::host_rss_bytes());
    if (resident + bytes <= limit) return;
    g_allocated.fetch_sub(bytes, std::memory_order_relaxed);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", core::format_bytes(bytes),
                     " with the process holding ", core::format_bytes(resident), " of RAM, past its limit of ", core::format_bytes(limit),
                     " (from the RAM free at set-up; device.max_memory sets a limit of your own)");
  }

  // The wrapped allocator; when the system itself is out of memory, once more after emptying the
  // cache. A refusal then is an OutOfMemoryError, as a cap's is: the OOM guard splits the step,
  // and a probe finds the batch too large, instead of the run failing on the allocator's words.
  c10::DataPtr allocate_inner(size_t n) {
    try {
      return inner_->allocate(n);
    } catch (const c10::Error& e) {
      if (release_cpu_cache() == 0) refuse(n, e);
    }
    try {
      return inner_->allocate(n);
    } catch (const c10::Error& e) {
      refuse(n, e);
    }
  }
  // Its text keeps the allocator's ("you tried to allocate N bytes"), which error_text.hpp reads.
  [[noreturn]] static void refuse(size_t n, const c10::Error& e) {
    const auto memory = device::read_memory_info();
    const std::string left = memory.address_space_bound()
                                 ? " of address space left under this process's limit, the shell's `ulimit -v` (raise it: `ulimit -v "
                                   "unlimited`)"
                                 : " of RAM free";
    TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: the system refused ", core::format_bytes(n), " with ",
                     core::format_bytes(memory.available()), left, " (", e.what_without_backtrace(), ")");
  }

  c10::Allocator* inner_;
};

std::once_flag g_install_once;

// What of the free RAM a process may take: the rest for the page cache and the other processes.
std::uint64_t usable_share(std::uint64_t available) { return available / 10 * 9; }

}  // namespace

void install_counting_cpu_allocator() {
  std::call_once(g_install_once, [] {
    if (core::env_choice("GPUTRAIN_CPU_CACHE", {"0", "1"}, "1, the block cache on") == "0") g_cache_enabled.store(false);
    g_uncapped_bound.store(usable_share(device::read_memory_info().available()));
    // Never freed: tensors allocated through it may outlive any owner we could give it.
    static CountingCpuAllocator* allocator = new CountingCpuAllocator(c10::GetCPUAllocator());
    // Priority above LibTorch's own registration (0), so a later default cannot displace it.
    c10::SetCPUAllocator(allocator, /*priority=*/100);
  });
}

std::uint64_t hold_to_free_ram() {
  install_counting_cpu_allocator();
  const auto resident = static_cast<std::uint64_t>(device::host_rss_bytes());
  const auto growth = usable_share(device::read_memory_info().available());
  if (resident == 0 || growth == 0) return 0;  // not known here: no limit
  set_cpu_resident_limit(resident + growth);
  return growth;
}

void set_cpu_memory_cap(std::uint64_t bytes) {
  install_counting_cpu_allocator();
  g_cap.store(bytes, std::memory_order_relaxed);
  std::vector<BlockCache::Block> pushed_out;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    pushed_out = shrink_cache_locked(cache_limit(g_allocated.load(std::memory_order_relaxed)));
  }
  free_blocks(pushed_out);
}

void set_cpu_resident_limit(std::uint64_t bytes) {
  install_counting_cpu_allocator();
  g_allocations.store(0, std::memory_order_relaxed);  // the first allocation after it checks
  g_resident_limit.store(bytes, std::memory_order_relaxed);
}

void enable_cpu_block_cache(bool enabled) {
  g_cache_enabled.store(enabled, std::memory_order_relaxed);
  if (!enabled) release_cpu_cache();
}

std::uint64_t release_cpu_cache() {
  std::vector<BlockCache::Block> released;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    released = shrink_cache_locked(0);
  }
  free_blocks(released);
  std::uint64_t bytes = 0;
  for (const auto& block : released) bytes += block.bytes;
  return bytes;
}

CpuMemoryStats cpu_memory_stats() {
  return {g_allocated.load(std::memory_order_relaxed),     g_peak.load(std::memory_order_relaxed),
          g_cached.load(std::memory_order_relaxed),        footprint_bound(),
          g_cap.load(std::memory_order_relaxed),           g_refused.load(std::memory_order_relaxed),
          g_resident_limit.load(std::memory_order_relaxed)};
}

void reset_cpu_peak() { g_peak.store(g_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace gputrain::memory
