#include "cuda_driver_api.hpp"

namespace gputrain::device::cuda_driver {

Library::Library() : library_(std::make_unique<SharedLibrary>("libcuda.so.1", SharedLibrary::Mode::load)) {
  if (!library_->is_open()) {
    error_ = "the NVIDIA driver is not installed or not visible here (" + library_->error() + ")";
    return;
  }
  const SharedLibrary& lib = *library_;
  auto bind = [&](auto& slot, const char* name) { slot = lib.symbol<std::remove_reference_t<decltype(slot)>>(name); };
  bind(api_.init, "cuInit");
  bind(api_.driver_version, "cuDriverGetVersion");
  bind(api_.device_count, "cuDeviceGetCount");
  bind(api_.device_get, "cuDeviceGet");
  bind(api_.device_name, "cuDeviceGetName");
  bind(api_.device_uuid, "cuDeviceGetUuid_v2");
  bind(api_.device_total_mem, "cuDeviceTotalMem_v2");
  bind(api_.device_attribute, "cuDeviceGetAttribute");
  bind(api_.device_pci_bus_id, "cuDeviceGetPCIBusId");
  bind(api_.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  bind(api_.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
  bind(api_.ctx_set_current, "cuCtxSetCurrent");
  bind(api_.mem_get_info, "cuMemGetInfo_v2");
  bind(api_.error_string, "cuGetErrorString");
  if (api_.init == nullptr || api_.device_count == nullptr || api_.device_get == nullptr) {
    error_ = "libcuda.so.1 lacks the basic driver API: the driver install is broken";
    return;
  }
  const CUresult status = api_.init(0);
  if (status != CUDA_SUCCESS) {
    error_ = "cuInit failed: " + describe(status);
    return;
  }
  ready_ = true;
}

std::string Library::describe(CUresult code) const {
  const char* text = nullptr;
  if (api_.error_string != nullptr && api_.error_string(code, &text) == CUDA_SUCCESS && text != nullptr) {
    return std::string(text) + " (CUresult " + std::to_string(int(code)) + ")";
  }
  return "CUresult " + std::to_string(int(code));
}

}  // namespace gputrain::device::cuda_driver
