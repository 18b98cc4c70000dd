#pragma once
// Every visible GPU and the driver behind it, from the CUDA driver API and NVML (both dlopen'd).
// Discovery never throws: zero GPUs is an answer, with the reason.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::device {

/// A PCIe link: current and maximum generation and width (lanes).
struct PcieLink {
  int generation = 0;
  int max_generation = 0;
  int width = 0;
  int max_width = 0;
};

/// ECC state and uncorrected error counts (volatile: since boot; aggregate: lifetime).
struct EccState {
  bool enabled = false;
  std::optional<std::uint64_t> uncorrected_volatile;
  std::optional<std::uint64_t> uncorrected_aggregate;
  std::optional<unsigned> remapped_rows_uncorrectable;  ///< rows remapped after uncorrectable errors
  std::optional<bool> remap_pending;                    ///< a reset is needed to finish remapping
  std::optional<bool> remap_failed;                     ///< remapping failed: the card needs service
};

/// One GPU as CUDA numbers it, enriched with NVML's view when the driver offers it.
struct GpuInfo {
  int index = 0;                  ///< CUDA ordinal (after CUDA_VISIBLE_DEVICES)
  std::optional<int> nvml_index;  ///< nvidia-smi's index
  std::string name;
  std::string uuid;                ///< "GPU-..." (or "MIG-..." for a MIG instance)
  std::string pci_bus_id;          ///< "0000:65:00.0"
  int cc_major = 0, cc_minor = 0;  ///< compute capability
  int sm_count = 0;
  std::uint64_t memory_total = 0;
  std::optional<std::uint64_t> memory_free;
  std::optional<int> sm_clock_mhz, sm_clock_max_mhz, memory_clock_mhz, memory_clock_max_mhz;
  int memory_bus_width_bits = 0;
  std::optional<PcieLink> pcie;
  std::optional<bool> mig_enabled;
  std::optional<EccState> ecc;
  std::optional<bool> persistence_mode;
  std::optional<int> temperature_c;
  std::optional<double> power_draw_w, power_limit_w;
  std::optional<std::uint64_t> throttle_reasons;  ///< NVML clocks-event bitmask

  /// "8.9" style compute capability.
  std::string compute_capability() const;
};

/// The driver as the process sees it.
struct DriverInfo {
  bool cuda_loaded = false;         ///< libcuda.so.1 loaded and cuInit succeeded
  std::string cuda_error;           ///< why not, in words
  int cuda_driver_api_version = 0;  ///< cuDriverGetVersion: the newest CUDA the driver supports, e.g. 13000
  bool nvml_loaded = false;
  std::string nvml_error;
  std::string driver_version;  ///< e.g. "580.95.05" (NVML, else /proc/driver/nvidia/version)
};

/// All visible GPUs plus the driver facts and anything worth telling about visibility.
struct GpuInventory {
  DriverInfo driver;
  std::vector<GpuInfo> gpus;
  int nvml_device_count = 0;       ///< GPUs on the machine, before CUDA_VISIBLE_DEVICES
  std::vector<std::string> notes;  ///< e.g. CUDA_VISIBLE_DEVICES problems, order mismatches
};

/// Finds every visible GPU. Honours CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER (as the driver
/// does) and explains them in `notes`. May block if the driver hangs: callers bound its time.
GpuInventory discover_gpus();

/// The driver's versions only, without initialising CUDA or enumerating GPUs (fast; for --version).
DriverInfo probe_driver();

/// Names of the bits set in an NVML clocks-event (throttle) mask, e.g. {"sw_power_cap"}.
std::vector<std::string> throttle_reason_names(std::uint64_t mask);

/// The bits of a throttle mask that mean lost performance (not idle or app-clock settings).
std::uint64_t harmful_throttle_reasons(std::uint64_t mask);

/// The same under full load, where holding the board at its power limit (sw_power_cap) is the
/// GPU working as designed: only heat and hardware slowdowns remain faults.
std::uint64_t harmful_throttle_reasons_under_load(std::uint64_t mask);

/// Parses the version out of /proc/driver/nvidia/version text ("... Kernel Module  580.95.05  ...").
std::string parse_proc_driver_version(const std::string& text);

}  // namespace gputrain::device
