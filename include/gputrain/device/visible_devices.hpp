#pragma once
// How CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and NVIDIA_VISIBLE_DEVICES select GPUs, explained.
// The CUDA driver applies these itself; we parse them to explain surprises (an invalid entry
// silently hides every entry after it) and to map CUDA ordinals to physical GPUs.

#include <optional>
#include <string>
#include <vector>

namespace gputrain::device {

/// A physical GPU as NVML numbers it (PCI bus order): index and UUID ("GPU-xxxxxxxx-...").
struct PhysicalGpu {
  int index = 0;
  std::string uuid;
};

/// The outcome of parsing CUDA_VISIBLE_DEVICES against the machine's GPUs.
struct VisibleDevices {
  bool restricted = false;            ///< the variable is set (even to "")
  std::vector<int> physical;          ///< physical indices, in CUDA ordinal order
  std::vector<std::string> mig;       ///< MIG instance UUIDs, resolved by the driver
  std::vector<std::string> problems;  ///< entries that were ignored, and why
};

/// Applies the CUDA runtime's rules: comma-separated ordinals or UUIDs (with or without "GPU-",
/// any unique prefix); unset shows all GPUs; "" shows none; the first invalid, out-of-range,
/// ambiguous or repeated entry ends the list, hiding every entry after it.
VisibleDevices parse_cuda_visible_devices(const std::optional<std::string>& value, const std::vector<PhysicalGpu>& gpus);

/// CUDA_DEVICE_ORDER: FASTEST_FIRST (the driver's default) or PCI_BUS_ID (nvidia-smi's order).
enum class DeviceOrder { fastest_first, pci_bus_id };

/// The order in force and, for a value CUDA does not know, a problem to report.
struct DeviceOrderSetting {
  DeviceOrder order = DeviceOrder::fastest_first;
  std::optional<std::string> problem;
};

/// Parses CUDA_DEVICE_ORDER (unset means FASTEST_FIRST).
DeviceOrderSetting parse_cuda_device_order(const std::optional<std::string>& value);

/// NVIDIA_VISIBLE_DEVICES as the NVIDIA Container Toolkit reads it when it starts a container.
struct NvidiaVisibleDevices {
  enum class Kind { unset, all, none, void_, list } kind = Kind::unset;
  std::vector<std::string> entries;  ///< for Kind::list: indices or UUIDs
};

/// Parses NVIDIA_VISIBLE_DEVICES: "all", "none" (driver libraries, no GPUs), "void" or ""
/// (as if unset), or a comma-separated list of indices and UUIDs.
NvidiaVisibleDevices parse_nvidia_visible_devices(const std::optional<std::string>& value);

}  // namespace gputrain::device
