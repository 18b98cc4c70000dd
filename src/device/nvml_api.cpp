#include "nvml_api.hpp"

namespace gputrain::device::nvml {

Library::Library() : library_(std::make_unique<SharedLibrary>("libnvidia-ml.so.1", SharedLibrary::Mode::load)) {
  if (!library_->is_open()) {
    error_ = "libnvidia-ml.so.1 not found (" + library_->error() + ")";
    return;
  }
  const SharedLibrary& lib = *library_;
  auto bind = [&](auto& slot, const char* name) { slot = lib.symbol<std::remove_reference_t<decltype(slot)>>(name); };
  bind(api_.init, "nvmlInit_v2");
  bind(api_.shutdown, "nvmlShutdown");
  bind(api_.error_string, "nvmlErrorString");
  bind(api_.system_driver_version, "nvmlSystemGetDriverVersion");
  bind(api_.system_cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2");
  bind(api_.device_count, "nvmlDeviceGetCount_v2");
  bind(api_.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(api_.handle_by_uuid, "nvmlDeviceGetHandleByUUID");
  bind(api_.handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(api_.index, "nvmlDeviceGetIndex");
  bind(api_.uuid, "nvmlDeviceGetUUID");
  bind(api_.memory_info, "nvmlDeviceGetMemoryInfo");
  bind(api_.clock, "nvmlDeviceGetClockInfo");
  bind(api_.max_clock, "nvmlDeviceGetMaxClockInfo");
  bind(api_.pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
  bind(api_.pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
  bind(api_.pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
  bind(api_.pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
  bind(api_.mig_mode, "nvmlDeviceGetMigMode");
  bind(api_.ecc_mode, "nvmlDeviceGetEccMode");
  bind(api_.ecc_errors, "nvmlDeviceGetTotalEccErrors");
  bind(api_.remapped_rows, "nvmlDeviceGetRemappedRows");
  bind(api_.persistence_mode, "nvmlDeviceGetPersistenceMode");
  bind(api_.temperature, "nvmlDeviceGetTemperature");
  bind(api_.power_usage, "nvmlDeviceGetPowerUsage");
  bind(api_.utilization, "nvmlDeviceGetUtilizationRates");
  bind(api_.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  // Renamed "clocks event reasons" in newer drivers; the old name stays exported.
  bind(api_.throttle_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (api_.throttle_reasons == nullptr) bind(api_.throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");

  if (api_.init == nullptr || api_.device_count == nullptr) {
    error_ = "libnvidia-ml.so.1 lacks nvmlInit_v2 (driver too old)";
    return;
  }
  const Return status = api_.init();
  if (status != kSuccess) {
    error_ = "nvmlInit failed: " + describe(status);
    return;
  }
  ready_ = true;
}

Library::~Library() {
  if (ready_ && api_.shutdown != nullptr) api_.shutdown();
}

std::string Library::describe(Return code) const {
  if (api_.error_string != nullptr) return api_.error_string(code);
  return "NVML error " + std::to_string(code);
}

}  // namespace gputrain::device::nvml
