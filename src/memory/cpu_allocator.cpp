#include "gputrain/memory/cpu_allocator.hpp"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "gputrain/core/units.hpp"

namespace gputrain::memory {
namespace {

std::atomic<std::uint64_t> g_allocated{0}, g_peak{0}, g_cap{0}, g_refused{0};

// Each live allocation, keyed by its context: the size to give back and the wrapped allocator's
// deleter. A side table rather than a wrapping context keeps "simple" data pointers (data ==
// context) simple, so raw_allocate() callers inside LibTorch keep working.
struct Allocation {
  std::uint64_t bytes;
  c10::DeleterFnPtr inner_deleter;
};
std::mutex g_table_mutex;
std::unordered_map<void*, Allocation>& table() {
  static auto* live = new std::unordered_map<void*, Allocation>();  // outlives static destructors
  return *live;
}

void delete_counted(void* context) {
  Allocation allocation{};
  {
    std::lock_guard<std::mutex> lock(g_table_mutex);
    const auto it = table().find(context);
    if (it == table().end()) return;  // cannot happen: every context we hand out is in the table
    allocation = it->second;
    table().erase(it);
  }
  g_allocated.fetch_sub(allocation.bytes, std::memory_order_relaxed);
  if (allocation.inner_deleter) allocation.inner_deleter(context);
}

void raise_peak(std::uint64_t now) {
  std::uint64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) override {
    const std::uint64_t bytes = n;
    const std::uint64_t cap = g_cap.load(std::memory_order_relaxed);
    const std::uint64_t now = g_allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (cap != 0 && now > cap) {
      g_allocated.fetch_sub(bytes, std::memory_order_relaxed);
      g_refused.fetch_add(1, std::memory_order_relaxed);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", core::format_bytes(bytes),
                       "; ", core::format_bytes(now - bytes), " already allocated under a cap of ",
                       core::format_bytes(cap), " (device.max_memory)");
    }
    raise_peak(now);
    c10::DataPtr inner;
    try {
      inner = inner_->allocate(n);
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
      std::lock_guard<std::mutex> lock(g_table_mutex);
      table()[context] = Allocation{bytes, inner_deleter};
    }
    return {data, context, &delete_counted, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &delete_counted; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { inner_->copy_data(dest, src, count); }

 private:
  c10::Allocator* inner_;
};

std::once_flag g_install_once;

}  // namespace

void install_counting_cpu_allocator() {
  std::call_once(g_install_once, [] {
    // Never freed: tensors allocated through it may outlive any owner we could give it.
    static CountingCpuAllocator* allocator = new CountingCpuAllocator(c10::GetCPUAllocator());
    // Priority above LibTorch's own registration (0), so a later default cannot displace it.
    c10::SetCPUAllocator(allocator, /*priority=*/100);
  });
}

void set_cpu_memory_cap(std::uint64_t bytes) {
  install_counting_cpu_allocator();
  g_cap.store(bytes, std::memory_order_relaxed);
}

CpuMemoryStats cpu_memory_stats() {
  return {g_allocated.load(std::memory_order_relaxed), g_peak.load(std::memory_order_relaxed),
          g_cap.load(std::memory_order_relaxed), g_refused.load(std::memory_order_relaxed)};
}

void reset_cpu_peak() { g_peak.store(g_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace gputrain::memory
