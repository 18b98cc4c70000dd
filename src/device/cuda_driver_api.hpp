#pragma once
// The CUDA driver API (libcuda.so.1), dlopen'd: present only where an NVIDIA driver is installed.
// Types come from the toolkit's cuda.h; symbol names are the versioned ones cuda.h maps to.

#include <cuda.h>

#include <memory>
#include <string>

#include "shared_library.hpp"

namespace gputrain::device::cuda_driver {

struct Api {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_version)(int*) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_uuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*device_total_mem)(size_t*, CUdevice) = nullptr;
  CUresult (*device_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*device_pci_bus_id)(char*, int, CUdevice) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*mem_get_info)(size_t*, size_t*) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;
};

/// libcuda.so.1 loaded and cuInit(0) done.
class Library {
 public:
  Library();
  bool ready() const { return ready_; }
  const std::string& error() const { return error_; }
  const Api& api() const { return api_; }
  std::string describe(CUresult code) const;

 private:
  std::unique_ptr<SharedLibrary> library_;
  Api api_;
  bool ready_ = false;
  std::string error_;
};

}  // namespace gputrain::device::cuda_driver
