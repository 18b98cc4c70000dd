#pragma once
// The part of NVML's C API that gputrain uses, resolved at run time from libnvidia-ml.so.1 (the
// driver installs it; the toolkit here ships no nvml.h). Types and values are those of NVML's
// stable ABI as documented in nvml.h.

#include <memory>
#include <string>

#include "shared_library.hpp"

namespace gputrain::device::nvml {

using Return = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using Device = struct nvmlDevice_st*;
constexpr Return kSuccess = 0;

struct Utilization {  // nvmlUtilization_t: percent of the last sample period
  unsigned gpu, memory;
};

struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};

enum ClockType { kGraphics = 0, kSm = 1, kMem = 2 };        // nvmlClockType_t
enum MemoryErrorType { kCorrected = 0, kUncorrected = 1 };  // nvmlMemoryErrorType_t
enum EccCounterType { kVolatile = 0, kAggregate = 1 };      // nvmlEccCounterType_t
constexpr int kTemperatureGpu = 0;                          // NVML_TEMPERATURE_GPU

/// The functions we call; any may be null when the driver is older than the symbol.
struct Api {
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*system_driver_version)(char*, unsigned) = nullptr;
  Return (*system_cuda_driver_version)(int*) = nullptr;
  Return (*device_count)(unsigned*) = nullptr;
  Return (*handle_by_index)(unsigned, Device*) = nullptr;
  Return (*handle_by_uuid)(const char*, Device*) = nullptr;
  Return (*handle_by_pci_bus_id)(const char*, Device*) = nullptr;
  Return (*index)(Device, unsigned*) = nullptr;
  Return (*uuid)(Device, char*, unsigned) = nullptr;
  Return (*memory_info)(Device, Memory*) = nullptr;
  Return (*clock)(Device, int, unsigned*) = nullptr;
  Return (*max_clock)(Device, int, unsigned*) = nullptr;
  Return (*pcie_gen)(Device, unsigned*) = nullptr;
  Return (*pcie_gen_max)(Device, unsigned*) = nullptr;
  Return (*pcie_width)(Device, unsigned*) = nullptr;
  Return (*pcie_width_max)(Device, unsigned*) = nullptr;
  Return (*mig_mode)(Device, unsigned*, unsigned*) = nullptr;
  Return (*ecc_mode)(Device, int*, int*) = nullptr;
  Return (*ecc_errors)(Device, int, int, unsigned long long*) = nullptr;
  Return (*remapped_rows)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  Return (*persistence_mode)(Device, int*) = nullptr;
  Return (*temperature)(Device, int, unsigned*) = nullptr;
  Return (*power_usage)(Device, unsigned*) = nullptr;
  Return (*power_limit)(Device, unsigned*) = nullptr;
  Return (*throttle_reasons)(Device, unsigned long long*) = nullptr;
  Return (*utilization)(Device, Utilization*) = nullptr;
};

/// libnvidia-ml.so.1 loaded and initialised; shut down when destroyed.
class Library {
 public:
  Library();
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  /// True when the library loaded and nvmlInit succeeded.
  bool ready() const { return ready_; }
  /// Why it is not ready, in words.
  const std::string& error() const { return error_; }
  const Api& api() const { return api_; }
  /// nvmlErrorString for a return code.
  std::string describe(Return code) const;

 private:
  std::unique_ptr<SharedLibrary> library_;
  Api api_;
  bool ready_ = false;
  std::string error_;
};

}  // namespace gputrain::device::nvml
