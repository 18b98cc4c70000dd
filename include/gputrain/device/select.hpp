#pragma once
// Turning a user's device choice ("auto", "cpu", "cuda", "cuda:N") into a concrete device.

#include <string>
#include <string_view>

#include "gputrain/device/gpu_info.hpp"

namespace gputrain::device {

/// A concrete device: the CPU or one CUDA ordinal.
struct DeviceChoice {
  enum class Kind { cpu, cuda } kind = Kind::cpu;
  int index = -1;  ///< CUDA ordinal for Kind::cuda

  /// "cpu" or "cuda:N" (the form LibTorch's Device accepts).
  std::string str() const;
};

/// Whether `spec` has one of the forms select_device takes: auto, cpu, cuda or cuda:N (N digits).
bool is_device_spec(std::string_view spec);

/// The device spec a near-miss means ("gpu" -> cuda, "GPU:1" -> cuda:1, "CPU" -> cpu); "" when none.
std::string near_device_spec(std::string_view text);

/// auto: the first GPU, or the CPU when none is visible; cpu; cuda: GPU 0; cuda:N: GPU N.
/// Throws UsageError for malformed text or a GPU that does not exist (naming those that do), and
/// EnvironmentError (exit 3) when a GPU is asked for on a machine that has none (with the reason).
DeviceChoice select_device(std::string_view spec, const GpuInventory& inventory);

}  // namespace gputrain::device
