#include "gputrain/device/gpu_info.hpp"

#include <array>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <utility>

#include "cuda_driver_api.hpp"
#include "gputrain/core/env.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/visible_devices.hpp"
#include "nvml_api.hpp"

namespace gputrain::device {
namespace {

std::string format_uuid(const CUuuid& uuid) {
  std::string text = "GPU-";
  std::array<char, 3> hex{};
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    std::snprintf(hex.data(), hex.size(), "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += hex.data();
  }
  return text;
}

template <typename Fn, typename... Args>
std::optional<unsigned> nvml_unsigned(Fn fn, nvml::Device device, Args... args) {
  unsigned value = 0;
  if (fn == nullptr || fn(device, args..., &value) != nvml::kSuccess) return std::nullopt;
  return value;
}

void enrich_from_nvml(const nvml::Library& lib, nvml::Device device, GpuInfo& gpu) {
  const nvml::Api& api = lib.api();
  if (auto index = nvml_unsigned(api.index, device)) gpu.nvml_index = int(*index);
  nvml::Memory memory{};
  if (api.memory_info != nullptr && api.memory_info(device, &memory) == nvml::kSuccess) gpu.memory_free = memory.free;
  if (auto v = nvml_unsigned(api.clock, device, int(nvml::kSm))) gpu.sm_clock_mhz = int(*v);
  if (auto v = nvml_unsigned(api.max_clock, device, int(nvml::kSm))) gpu.sm_clock_max_mhz = int(*v);
  if (auto v = nvml_unsigned(api.clock, device, int(nvml::kMem))) gpu.memory_clock_mhz = int(*v);
  if (auto v = nvml_unsigned(api.max_clock, device, int(nvml::kMem))) gpu.memory_clock_max_mhz = int(*v);

  const auto gen = nvml_unsigned(api.pcie_gen, device);
  const auto gen_max = nvml_unsigned(api.pcie_gen_max, device);
  const auto width = nvml_unsigned(api.pcie_width, device);
  const auto width_max = nvml_unsigned(api.pcie_width_max, device);
  if (gen && gen_max && width && width_max) gpu.pcie = PcieLink{int(*gen), int(*gen_max), int(*width), int(*width_max)};

  unsigned mig_current = 0, mig_pending = 0;
  if (api.mig_mode != nullptr && api.mig_mode(device, &mig_current, &mig_pending) == nvml::kSuccess) {
    gpu.mig_enabled = mig_current != 0;
  }
  int ecc_current = 0, ecc_pending = 0;
  if (api.ecc_mode != nullptr && api.ecc_mode(device, &ecc_current, &ecc_pending) == nvml::kSuccess) {
    EccState ecc;
    ecc.enabled = ecc_current != 0;
    unsigned long long count = 0;
    if (api.ecc_errors != nullptr && api.ecc_errors(device, nvml::kUncorrected, nvml::kVolatile, &count) == nvml::kSuccess) {
      ecc.uncorrected_volatile = count;
    }
    if (api.ecc_errors != nullptr && api.ecc_errors(device, nvml::kUncorrected, nvml::kAggregate, &count) == nvml::kSuccess) {
      ecc.uncorrected_aggregate = count;
    }
    unsigned corrected_rows = 0, uncorrected_rows = 0, pending = 0, failed = 0;
    if (api.remapped_rows != nullptr &&
        api.remapped_rows(device, &corrected_rows, &uncorrected_rows, &pending, &failed) == nvml::kSuccess) {
      ecc.remapped_rows_uncorrectable = uncorrected_rows;
      ecc.remap_pending = pending != 0;
      ecc.remap_failed = failed != 0;
    }
    gpu.ecc = ecc;
  }
  int persistence = 0;
  if (api.persistence_mode != nullptr && api.persistence_mode(device, &persistence) == nvml::kSuccess) {
    gpu.persistence_mode = persistence != 0;
  }
  if (auto t = nvml_unsigned(api.temperature, device, nvml::kTemperatureGpu)) gpu.temperature_c = int(*t);
  if (auto mw = nvml_unsigned(api.power_usage, device)) gpu.power_draw_w = *mw / 1000.0;
  if (auto mw = nvml_unsigned(api.power_limit, device)) gpu.power_limit_w = *mw / 1000.0;
  unsigned long long reasons = 0;
  if (api.throttle_reasons != nullptr && api.throttle_reasons(device, &reasons) == nvml::kSuccess) {
    gpu.throttle_reasons = reasons;
  }
}

std::optional<nvml::Device> nvml_handle_for(const nvml::Library& lib, const GpuInfo& gpu) {
  nvml::Device device = nullptr;
  if (lib.api().handle_by_uuid != nullptr && lib.api().handle_by_uuid(gpu.uuid.c_str(), &device) == nvml::kSuccess) {
    return device;
  }
  if (lib.api().handle_by_pci_bus_id != nullptr && lib.api().handle_by_pci_bus_id(gpu.pci_bus_id.c_str(), &device) == nvml::kSuccess) {
    return device;
  }
  return std::nullopt;
}

std::vector<PhysicalGpu> nvml_physical_gpus(const nvml::Library& lib, unsigned count) {
  std::vector<PhysicalGpu> gpus;
  for (unsigned i = 0; i < count; ++i) {
    nvml::Device device = nullptr;
    std::array<char, 96> uuid{};
    if (lib.api().handle_by_index == nullptr || lib.api().handle_by_index(i, &device) != nvml::kSuccess) continue;
    if (lib.api().uuid != nullptr) lib.api().uuid(device, uuid.data(), unsigned(uuid.size()));
    gpus.push_back({int(i), uuid.data()});
  }
  return gpus;
}

// Free memory without NVML: the primary context (the one LibTorch will use) answers cuMemGetInfo.
std::optional<std::uint64_t> free_memory_via_context(const cuda_driver::Library& lib, CUdevice device) {
  const cuda_driver::Api& api = lib.api();
  if (api.primary_ctx_retain == nullptr || api.ctx_set_current == nullptr || api.mem_get_info == nullptr) return std::nullopt;
  CUcontext context = nullptr;
  if (api.primary_ctx_retain(&context, device) != CUDA_SUCCESS) return std::nullopt;
  std::optional<std::uint64_t> result;
  size_t free = 0, total = 0;
  if (api.ctx_set_current(context) == CUDA_SUCCESS && api.mem_get_info(&free, &total) == CUDA_SUCCESS) result = free;
  api.ctx_set_current(nullptr);
  if (api.primary_ctx_release != nullptr) api.primary_ctx_release(device);
  return result;
}

GpuInfo describe_cuda_device(const cuda_driver::Library& lib, int ordinal, CUdevice device) {
  const cuda_driver::Api& api = lib.api();
  GpuInfo gpu;
  gpu.index = ordinal;
  std::array<char, 256> name{};
  if (api.device_name != nullptr && api.device_name(name.data(), int(name.size()), device) == CUDA_SUCCESS) gpu.name = name.data();
  CUuuid uuid{};
  if (api.device_uuid != nullptr && api.device_uuid(&uuid, device) == CUDA_SUCCESS) gpu.uuid = format_uuid(uuid);
  std::array<char, 32> bus{};
  if (api.device_pci_bus_id != nullptr && api.device_pci_bus_id(bus.data(), int(bus.size()), device) == CUDA_SUCCESS) {
    gpu.pci_bus_id = bus.data();
  }
  size_t total = 0;
  if (api.device_total_mem != nullptr && api.device_total_mem(&total, device) == CUDA_SUCCESS) gpu.memory_total = total;
  auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    if (api.device_attribute != nullptr) api.device_attribute(&value, which, device);
    return value;
  };
  gpu.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  gpu.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  gpu.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  gpu.memory_bus_width_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  // Runtime fallbacks for clocks (kHz) and ECC; NVML overwrites them with live values.
  if (const int khz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE); khz > 0) gpu.sm_clock_max_mhz = khz / 1000;
  if (const int khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE); khz > 0) gpu.memory_clock_max_mhz = khz / 1000;
  gpu.ecc = EccState{attribute(CU_DEVICE_ATTRIBUTE_ECC_ENABLED) != 0, {}, {}, {}, {}, {}};
  return gpu;
}

// NVML's driver version, else the kernel module's (/proc), else "".
std::string driver_version(const nvml::Library& nvml) {
  std::array<char, 96> version{};
  if (nvml.ready() && nvml.api().system_driver_version != nullptr &&
      nvml.api().system_driver_version(version.data(), unsigned(version.size())) == nvml::kSuccess) {
    return version.data();
  }
  std::ifstream proc("/proc/driver/nvidia/version");
  std::stringstream text;
  text << proc.rdbuf();
  return parse_proc_driver_version(text.str());
}

void explain_visibility(GpuInventory& inventory, const std::vector<PhysicalGpu>& physical) {
  const auto visible = parse_cuda_visible_devices(core::env("CUDA_VISIBLE_DEVICES"), physical);
  for (const auto& problem : visible.problems) inventory.notes.push_back(problem);
  const auto order = parse_cuda_device_order(core::env("CUDA_DEVICE_ORDER"));
  if (order.problem) inventory.notes.push_back(*order.problem);
  if (order.order == DeviceOrder::fastest_first && !visible.restricted) {
    for (const auto& gpu : inventory.gpus) {
      if (gpu.nvml_index && *gpu.nvml_index != gpu.index) {
        inventory.notes.push_back("CUDA numbers GPUs fastest first, so CUDA device " + std::to_string(gpu.index) + " is nvidia-smi's GPU " +
                                  std::to_string(*gpu.nvml_index) + "; set CUDA_DEVICE_ORDER=PCI_BUS_ID to make the numbers agree");
        break;
      }
    }
  }
}

}  // namespace

std::string GpuInfo::compute_capability() const { return std::to_string(cc_major) + "." + std::to_string(cc_minor); }

std::string parse_proc_driver_version(const std::string& text) {
  static const std::regex kVersion(R"(Kernel Module(?: for [^ ]+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?))");
  std::smatch match;
  return std::regex_search(text, match, kVersion) ? match[1].str() : "";
}

DriverInfo probe_driver() {
  DriverInfo driver;
  nvml::Library nvml;
  driver.nvml_loaded = nvml.ready();
  driver.nvml_error = nvml.error();
  driver.driver_version = driver_version(nvml);
  SharedLibrary cuda("libcuda.so.1", SharedLibrary::Mode::load);
  driver.cuda_loaded = cuda.is_open();
  driver.cuda_error = cuda.is_open() ? "" : "the NVIDIA driver is not installed or not visible here (" + cuda.error() + ")";
  if (auto get_version = cuda.symbol<CUresult (*)(int*)>("cuDriverGetVersion")) get_version(&driver.cuda_driver_api_version);
  return driver;
}

GpuInventory discover_gpus() {
  GpuInventory inventory;
  nvml::Library nvml;
  inventory.driver.nvml_loaded = nvml.ready();
  inventory.driver.nvml_error = nvml.error();
  std::vector<PhysicalGpu> physical;
  inventory.driver.driver_version = driver_version(nvml);
  if (nvml.ready()) {
    unsigned count = 0;
    if (nvml.api().device_count(&count) == nvml::kSuccess) inventory.nvml_device_count = int(count);
    physical = nvml_physical_gpus(nvml, count);
  }

  cuda_driver::Library cuda;
  inventory.driver.cuda_loaded = cuda.ready();
  inventory.driver.cuda_error = cuda.error();
  if (!cuda.ready()) {
    if (inventory.nvml_device_count > 0) {
      inventory.notes.push_back("NVML sees " + core::counted(inventory.nvml_device_count, "GPU") +
                                " but CUDA cannot use them: " + cuda.error());
    }
    return inventory;
  }
  if (cuda.api().driver_version != nullptr) cuda.api().driver_version(&inventory.driver.cuda_driver_api_version);

  int count = 0;
  if (const CUresult status = cuda.api().device_count(&count); status != CUDA_SUCCESS) {
    inventory.notes.push_back("cuDeviceGetCount failed: " + cuda.describe(status));
    count = 0;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    if (cuda.api().device_get(&device, ordinal) != CUDA_SUCCESS) continue;
    GpuInfo gpu = describe_cuda_device(cuda, ordinal, device);
    if (nvml.ready()) {
      if (auto handle = nvml_handle_for(nvml, gpu)) enrich_from_nvml(nvml, *handle, gpu);
    }
    if (!gpu.memory_free) gpu.memory_free = free_memory_via_context(cuda, device);
    inventory.gpus.push_back(std::move(gpu));
  }
  explain_visibility(inventory, physical);
  return inventory;
}

namespace {
// NVML clocks-event reason bits (nvmlClocksEventReason*), in bit order.
constexpr std::array<std::pair<std::uint64_t, const char*>, 9> kThrottleBits = {{{0x1, "gpu_idle"},
                                                                                 {0x2, "applications_clocks_setting"},
                                                                                 {0x4, "sw_power_cap"},
                                                                                 {0x8, "hw_slowdown"},
                                                                                 {0x10, "sync_boost"},
                                                                                 {0x20, "sw_thermal_slowdown"},
                                                                                 {0x40, "hw_thermal_slowdown"},
                                                                                 {0x80, "hw_power_brake_slowdown"},
                                                                                 {0x100, "display_clock_setting"}}};
}  // namespace

std::vector<std::string> throttle_reason_names(std::uint64_t mask) {
  std::vector<std::string> names;
  for (const auto& [bit, name] : kThrottleBits) {
    if (mask & bit) names.emplace_back(name);
  }
  return names;
}

std::uint64_t harmful_throttle_reasons(std::uint64_t mask) {
  // Idle, application clocks, sync boost and display clocks are settings, not lost performance.
  constexpr std::uint64_t kHarmful = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
  return mask & kHarmful;
}

std::uint64_t harmful_throttle_reasons_under_load(std::uint64_t mask) {
  constexpr std::uint64_t kSwPowerCap = 0x4;
  return harmful_throttle_reasons(mask) & ~kSwPowerCap;
}

}  // namespace gputrain::device
