#include "device_settings.hpp"

#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <cstdlib>

namespace gputrain::train {

void apply_backend_settings(const TrainConfig& t) {
  auto& ctx = at::globalContext();
  ctx.setFloat32MatmulPrecision(t.tf32 ? "high" : "highest");
  ctx.setAllowTF32CuDNN(t.tf32);
  ctx.setBenchmarkCuDNN(t.cudnn_benchmark && !t.deterministic);
  ctx.setDeterministicCuDNN(t.deterministic);
  if (t.deterministic) {
    // cuBLAS is deterministic only with a fixed workspace, chosen before its first use.
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  }
  ctx.setDeterministicAlgorithms(t.deterministic, /*warn_only=*/false);
}

GpuMemory gpu_memory(c10::Device device) {
  if (!device.is_cuda()) return {};
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  const auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  return GpuMemory{static_cast<std::uint64_t>(stats.allocated_bytes[all].current),
                   static_cast<std::uint64_t>(stats.reserved_bytes[all].current),
                   static_cast<std::uint64_t>(stats.allocated_bytes[all].peak)};
}

}  // namespace gputrain::train
