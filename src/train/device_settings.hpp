#pragma once
// What the trainer and quick-train both do to a device: apply the backend switches of the `train`
// section, and read the caching allocator's memory figures.

#include <c10/core/Device.h>

#include <cstdint>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// TF32, cuDNN benchmark and deterministic algorithms, as `t` asks.
void apply_backend_settings(const TrainConfig& t);

/// Bytes held by LibTorch's CUDA caching allocator on `device`; all 0 for the CPU.
struct GpuMemory {
  std::uint64_t allocated = 0, reserved = 0, peak = 0;
};
GpuMemory gpu_memory(c10::Device device);

}  // namespace gputrain::train
