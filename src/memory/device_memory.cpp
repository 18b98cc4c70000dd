#include "gputrain/memory/device_memory.hpp"

#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/memory/cpu_allocator.hpp"

namespace gputrain::memory {
namespace {

std::mutex g_caps_mutex;
std::map<int, std::uint64_t> g_gpu_caps;  // device index -> bytes

std::uint64_t gpu_cap(int index) {
  std::lock_guard<std::mutex> lock(g_caps_mutex);
  const auto it = g_gpu_caps.find(index);
  return it == g_gpu_caps.end() ? 0 : it->second;
}

struct FreeAndTotal {
  std::uint64_t free = 0, total = 0;
};

FreeAndTotal gpu_free_and_total(c10::DeviceIndex index) {
  int previous = 0;
  FreeAndTotal out;
  if (cudaGetDevice(&previous) != cudaSuccess) return out;
  size_t free = 0, total = 0;
  if (cudaSetDevice(index) == cudaSuccess && cudaMemGetInfo(&free, &total) == cudaSuccess) out = {free, total};
  cudaSetDevice(previous);
  cudaGetLastError();  // leave no sticky error behind for LibTorch to trip over
  return out;
}

// LibTorch sets its caching allocator up on the first CUDA tensor; asked for statistics, a peak
// reset or a cap before that, it throws "Invalid device argument ... did you call init?".
void init_cuda_allocator() { at::globalContext().lazyInitDevice(c10::DeviceType::CUDA); }

}  // namespace

MemoryFigures memory_figures(c10::Device device, bool with_limit) {
  MemoryFigures f;
  if (device.is_cuda()) {
    init_cuda_allocator();
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    const auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    f.allocated = static_cast<std::uint64_t>(stats.allocated_bytes[all].current);
    f.reserved = static_cast<std::uint64_t>(stats.reserved_bytes[all].current);
    f.peak = static_cast<std::uint64_t>(stats.allocated_bytes[all].peak);
    f.reserved_peak = static_cast<std::uint64_t>(stats.reserved_bytes[all].peak);
    if (!with_limit) return f;
    // What we reserve is ours to reuse; what is free we may still take.
    const auto memory = gpu_free_and_total(device.index());
    f.limit = memory.free + f.reserved;
    f.limit_source = "free GPU memory";
    if (const auto cap = gpu_cap(device.index()); cap != 0 && cap < f.limit) {
      f.limit = cap;
      f.limit_source = "device.max_memory";
    }
    return f;
  }
  const auto cpu = cpu_memory_stats();
  f.allocated = cpu.allocated;
  f.reserved = cpu.allocated + cpu.cached;
  f.peak = cpu.peak;
  if (!with_limit) return f;
  if (cpu.cap != 0) {
    f.limit = cpu.cap;
    f.limit_source = "device.max_memory";
    return f;
  }
  const auto system = device::read_memory_info();
  f.limit = system.ram_available + f.reserved;  // what we hold is ours to reuse
  f.limit_source = "available RAM";
  if (system.memory_limit && *system.memory_limit < f.limit) {
    f.limit = *system.memory_limit;
    f.limit_source = "cgroup limit";
  }
  if (system.address_space_left && *system.address_space_left + f.reserved < f.limit) {  // what we hold is mapped already
    f.limit = *system.address_space_left + f.reserved;
    f.limit_source = "address space left under `ulimit -v`";
  }
  return f;
}

void reset_peak_memory(c10::Device device) {
  if (device.is_cuda()) {
    init_cuda_allocator();
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
  } else {
    reset_cpu_peak();
  }
}

void release_cached_memory(c10::Device device) {
  if (device.is_cuda()) {
    init_cuda_allocator();
    c10::cuda::CUDACachingAllocator::emptyCache();
  } else {
    release_cpu_cache();
  }
}

void synchronize(c10::Device device) {
  if (device.is_cuda()) c10::cuda::device_synchronize();
}

void cap_memory(c10::Device device, std::uint64_t bytes) {
  if (!device.is_cuda()) {
    set_cpu_memory_cap(bytes);
    return;
  }
  const auto total = gpu_free_and_total(device.index()).total;
  if (total != 0 && bytes > total)
    throw UsageError("device.max_memory is " + core::format_bytes(bytes) + " but " + device.str() + " has " + core::format_bytes(total),
                     "set device.max_memory to at most " + core::format_bytes(total) + ", or 0 for no cap");
  const double fraction = bytes == 0 || total == 0 ? 1.0 : static_cast<double>(bytes) / static_cast<double>(total);
  init_cuda_allocator();
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, device.index());
  std::lock_guard<std::mutex> lock(g_caps_mutex);
  g_gpu_caps[device.index()] = bytes;
}

std::string describe(const MemoryFigures& f) {
  std::string text = "allocated " + core::format_bytes(f.allocated);
  if (f.reserved != f.allocated) text += ", reserved " + core::format_bytes(f.reserved);
  text += ", peak " + core::format_bytes(f.peak);
  if (f.limit != 0) text += "; limit " + core::format_bytes(f.limit) + " (" + f.limit_source + ")";
  return text;
}

std::string more_memory_remedy(const MemoryFigures& f) {
  if (f.limit_source == "device.max_memory") return "allow more memory (device.max_memory)";
  if (f.limit_source.find("ulimit -v") != std::string::npos)
    return "raise this shell's address-space limit before starting gputrain (`ulimit -v unlimited`)";
  if (f.limit_source == "cgroup limit") return "give the container or job more memory (docker run --memory, the job's memory request)";
  if (f.limit_source == "free GPU memory") return "free GPU memory that other processes hold (nvidia-smi lists them)";
  if (f.limit_source == "available RAM") return "free RAM that other processes hold";
  return "";
}

}  // namespace gputrain::memory
