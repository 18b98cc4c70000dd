// container.*: inside a container, are the GPUs passed through; on a host, can containers get GPUs.
#include <cstdlib>
#include <filesystem>

#include "check_sets.hpp"
#include "gputrain/core/env.hpp"
#include "gputrain/device/visible_devices.hpp"

namespace gputrain::checks {
namespace {

bool on_path(const std::string& program) {
  const auto path = core::env("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto end = path.find(':', start);
    const std::string dir = path.substr(start, end - start);
    std::error_code ec;
    if (!dir.empty() && std::filesystem::exists(std::filesystem::path(dir) / program, ec)) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

bool has_gpu_device_nodes() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidiactl", ec) && std::filesystem::exists("/dev/nvidia0", ec);
}

Result check_inside(const Context& c) {
  const auto& container = c.system.container;
  const std::string where = "inside a " + (container.runtime.empty() ? std::string("container") : container.runtime + " container");
  const auto requested = device::parse_nvidia_visible_devices(core::env("NVIDIA_VISIBLE_DEVICES"));
  using Kind = device::NvidiaVisibleDevices::Kind;
  const std::string remedy =
      "start it with GPUs: `docker run --gpus all ...`, or in compose "
      "`deploy.resources.reservations.devices: [{driver: nvidia, count: all, capabilities: [gpu]}]`; "
      "the host needs the NVIDIA Container Toolkit (`nvidia-ctk runtime configure --runtime=docker`)";
  if (requested.kind == Kind::none || requested.kind == Kind::void_) {
    const std::string detail = where + "; NVIDIA_VISIBLE_DEVICES=" + core::env("NVIDIA_VISIBLE_DEVICES").value_or("") + " asks for no GPUs";
    return c.allow_cpu ? warn(detail, remedy) : fail(detail, remedy);
  }
  if (!has_gpu_device_nodes()) {
    const std::string detail = where + " with no GPU device nodes (/dev/nvidia0, /dev/nvidiactl)";
    return c.allow_cpu ? warn(detail, remedy) : fail(detail, remedy);
  }
  return pass(where + "; GPU device nodes are passed through");
}

Result check_host() {
  const bool toolkit = on_path("nvidia-ctk") || on_path("nvidia-container-cli");
  const bool engine = on_path("docker") || on_path("podman");
  if (toolkit) return pass("on the host; NVIDIA Container Toolkit present (containers can get GPUs)");
  if (engine) {
    return warn("on the host; a container engine is installed but the NVIDIA Container Toolkit is not",
                "install nvidia-container-toolkit, then `sudo nvidia-ctk runtime configure --runtime=docker && "
                "sudo systemctl restart docker`");
  }
  return pass("on the host; no container engine (the NVIDIA Container Toolkit is only needed for containers)");
}

}  // namespace

std::vector<Check> container_checks() {
  return {{"container.gpu_access", "container", "GPU access for containers", std::chrono::seconds(2),
           [](const Context& c) { return c.system.container.inside ? check_inside(c) : check_host(); }}};
}

std::string no_gpu_remedy(const Context& c) {
  std::string remedy;
  const auto visible = core::env("CUDA_VISIBLE_DEVICES");
  if (visible && c.inventory.nvml_device_count > 0) {
    remedy = "CUDA_VISIBLE_DEVICES='" + *visible + "' hides the GPUs: unset it or list valid GPUs (0,1 or GPU-<uuid>)";
  } else if (c.system.container.inside) {
    remedy = "start the container with GPUs (`docker run --gpus all`, or a compose device reservation)";
  } else {
    remedy = "install the NVIDIA driver 580 or newer (`sudo apt install nvidia-driver-580`) and reboot";
  }
  return c.allow_cpu ? remedy : remedy + "; or pass --allow-cpu to accept a CPU-only machine (CI)";
}

}  // namespace gputrain::checks
