// gpu.*: how many GPUs, and each one's capability, memory, ECC, PCIe link, clocks and persistence.
#include <string>

#include "check_sets.hpp"
#include "gputrain/checks/arch_support.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::checks {
namespace {

using core::format_bytes;
using core::kGiB;

constexpr int kMinCcMajor = 7, kMinCcMinor = 5;  // CUDA 13 dropped Maxwell, Pascal and Volta
constexpr std::uint64_t kWarnVram = 8 * kGiB;
constexpr std::uint64_t kFailVram = 4 * kGiB;

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

Result check_count(const Context& c) {
  const auto& gpus = c.inventory.gpus;
  if (gpus.empty()) {
    const std::string detail =
        "no usable CUDA GPU" + (c.inventory.driver.cuda_loaded ? std::string() : " (" + c.inventory.driver.cuda_error + ")");
    if (c.allow_cpu) return warn(detail + "; --allow-cpu: continuing on the CPU", no_gpu_remedy(c));
    return fail(detail, no_gpu_remedy(c));
  }
  std::vector<std::string> names;
  for (const auto& gpu : gpus) names.push_back(std::to_string(gpu.index) + ": " + gpu.name);
  return pass(core::counted(std::int64_t(gpus.size()), "GPU") + ": " + join(names, ", "), {{"gpu_count", double(gpus.size()), "", {}}});
}

Result check_visibility(const Context& c) {
  if (c.inventory.notes.empty()) return pass("CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER select the GPUs as written");
  return warn(join(c.inventory.notes, "; "),
              "fix CUDA_VISIBLE_DEVICES (comma-separated indices or GPU-<uuid>, no spaces or unknown entries) "
              "and set CUDA_DEVICE_ORDER=PCI_BUS_ID");
}

Result check_capability(const device::GpuInfo& gpu) {
  const std::string cc = gpu.compute_capability();
  std::string detail = gpu.name + ", compute capability " + cc + ", " + std::to_string(gpu.sm_count) + " SMs";
  if (gpu.mig_enabled.value_or(false)) detail += ", MIG enabled (tested as it is)";
  if (gpu.cc_major * 10 + gpu.cc_minor < kMinCcMajor * 10 + kMinCcMinor) {
    return fail(detail + "; CUDA 13 supports compute capability 7.5 and newer",
                "use a Turing (7.5) or newer GPU, or a LibTorch built for CUDA 12 with this card's architecture");
  }
  const auto targets = torch_cuda_arch_list();
  if (targets.empty()) return pass(detail + "; LibTorch's architecture list could not be read");
  if (!targets_cover(targets, gpu.cc_major, gpu.cc_minor)) {
    return fail(detail + "; this LibTorch has no kernels for it (built for " + join(targets, " ") + ")",
                "install a torch build that lists sm_" + std::to_string(gpu.cc_major) + std::to_string(gpu.cc_minor) +
                    " (a newer wheel, or build LibTorch with TORCH_CUDA_ARCH_LIST=" + cc + ")");
  }
  return pass(detail + "; LibTorch has kernels for it");
}

Result check_memory(const device::GpuInfo& gpu) {
  std::string detail = format_bytes(gpu.memory_total) + " total";
  std::vector<Figure> figures{{"memory_total", double(gpu.memory_total) / double(kGiB), "GiB", {}}};
  if (gpu.memory_free) {
    detail += ", " + format_bytes(*gpu.memory_free) + " free";
    figures.push_back({"memory_free", double(*gpu.memory_free) / double(kGiB), "GiB", {}});
  }
  const std::string remedy = "train with a smaller model or batch (batch_size: auto), bf16-mixed precision, or a larger GPU";
  if (gpu.memory_total < kFailVram) return fail(detail + "; under 4 GiB cannot hold a useful training step", remedy, figures);
  if (gpu.memory_total < kWarnVram) return warn(detail + "; under 8 GiB limits model and batch size", remedy, figures);
  if (gpu.memory_free && *gpu.memory_free < gpu.memory_total / 2) {
    return warn(detail + "; other processes hold over half of it",
                "see who with `nvidia-smi --query-compute-apps=pid,used_memory --format=csv`", figures);
  }
  return pass(detail, figures);
}

Result check_ecc(const device::GpuInfo& gpu) {
  if (!gpu.ecc) return skip("ECC state unknown");
  const auto& ecc = *gpu.ecc;
  if (!ecc.enabled) return pass("ECC off (or not supported by this card)");
  const std::string inspect = "inspect with `nvidia-smi -q -d ECC,ROW_REMAPPER -i " + std::to_string(gpu.index) + "`";
  if (ecc.remap_failed.value_or(false)) {
    return fail("row remapping failed: memory errors could not be repaired", "drain the node and have the GPU serviced; " + inspect);
  }
  if (ecc.uncorrected_volatile.value_or(0) > 0) {
    return fail(
        std::to_string(*ecc.uncorrected_volatile) + " uncorrected ECC errors since boot",
        "stop jobs on this GPU, reset it (`nvidia-smi -r -i " + std::to_string(gpu.index) + "`); if errors return, service it; " + inspect);
  }
  if (ecc.remap_pending.value_or(false)) {
    return warn("a memory row remap is pending",
                "reset the GPU when idle (`nvidia-smi -r -i " + std::to_string(gpu.index) + "`) to finish it");
  }
  if (ecc.uncorrected_aggregate.value_or(0) > 0) {
    return warn(std::to_string(*ecc.uncorrected_aggregate) + " uncorrected ECC errors over the GPU's life", "watch for more; " + inspect);
  }
  return pass("ECC on, no uncorrected errors");
}

Result check_pcie(const device::GpuInfo& gpu) {
  if (!gpu.pcie) return skip("PCIe link unknown (needs NVML)");
  const auto& link = *gpu.pcie;
  const std::string detail = "PCIe gen " + std::to_string(link.generation) + " x" + std::to_string(link.width) + " (max gen " +
                             std::to_string(link.max_generation) + " x" + std::to_string(link.max_width) + ")";
  std::vector<Figure> figures{{"pcie_width", double(link.width), "lanes", double(link.max_width)},
                              {"pcie_generation", double(link.generation), "", double(link.max_generation)}};
  if (link.width < link.max_width) {
    return warn(detail + "; the link runs narrower than it can, cutting host-device bandwidth",
                "reseat the card or move it to a full x" + std::to_string(link.max_width) + " slot; check BIOS lane settings", figures);
  }
  if (link.generation < link.max_generation) {
    return pass(detail + "; idle GPUs lower their link generation to save power (the bandwidth checks measure it under load)", figures);
  }
  return pass(detail, figures);
}

Result check_throttling(const device::GpuInfo& gpu) {
  if (!gpu.throttle_reasons) return skip("clock throttle reasons unknown (needs NVML)");
  const auto harmful = device::harmful_throttle_reasons(*gpu.throttle_reasons);
  std::string clocks;
  if (gpu.sm_clock_mhz && gpu.sm_clock_max_mhz) {
    clocks = "SM clock " + std::to_string(*gpu.sm_clock_mhz) + "/" + std::to_string(*gpu.sm_clock_max_mhz) + " MHz";
  }
  if (gpu.temperature_c) clocks += (clocks.empty() ? "" : ", ") + std::to_string(*gpu.temperature_c) + " C";
  if (gpu.power_draw_w && gpu.power_limit_w) {
    clocks +=
        (clocks.empty() ? "" : ", ") + core::format_fixed(*gpu.power_draw_w, 0) + "/" + core::format_fixed(*gpu.power_limit_w, 0) + " W";
  }
  if (harmful != 0) {
    return warn(clocks + "; throttled: " + join(device::throttle_reason_names(harmful), ", "),
                "thermal: improve cooling/airflow; power: check `nvidia-smi -q -d PERFORMANCE,POWER -i " + std::to_string(gpu.index) +
                    "` and the power limit");
  }
  return pass(clocks.empty() ? "not throttled" : clocks + "; not throttled");
}

Result check_persistence(const device::GpuInfo& gpu) {
  if (!gpu.persistence_mode) return skip("persistence mode unknown (needs NVML)");
  if (*gpu.persistence_mode) return pass("persistence mode on");
  return warn("persistence mode off: each process pays the driver's start-up (seconds on multi-GPU boxes)",
              "on the host: `sudo systemctl enable --now nvidia-persistenced` (or `sudo nvidia-smi -pm 1`)");
}

}  // namespace

std::vector<Check> gpu_checks(const Context& context) {
  std::vector<Check> checks{
      {"gpu.count", "gpu", "usable GPUs", std::chrono::seconds(2), check_count},
      {"gpu.visibility", "gpu", "CUDA_VISIBLE_DEVICES and device order", std::chrono::seconds(2), check_visibility},
  };
  for (const auto& gpu : context.inventory.gpus) {
    const std::string prefix = "gpu." + std::to_string(gpu.index) + ".";
    const std::string label = " (GPU " + std::to_string(gpu.index) + ")";
    auto per_gpu = [gpu](Result (*fn)(const device::GpuInfo&)) { return [gpu, fn](const Context&) { return fn(gpu); }; };
    checks.push_back({prefix + "compute_capability", "gpu", "compute capability and LibTorch kernels" + label, std::chrono::seconds(5),
                      per_gpu(check_capability)});
    checks.push_back({prefix + "memory", "gpu", "memory" + label, std::chrono::seconds(2), per_gpu(check_memory)});
    checks.push_back({prefix + "ecc", "gpu", "ECC errors" + label, std::chrono::seconds(2), per_gpu(check_ecc)});
    checks.push_back({prefix + "pcie", "gpu", "PCIe link" + label, std::chrono::seconds(2), per_gpu(check_pcie)});
    checks.push_back({prefix + "throttling", "gpu", "clocks and throttling" + label, std::chrono::seconds(2), per_gpu(check_throttling)});
    checks.push_back({prefix + "persistence", "gpu", "persistence mode" + label, std::chrono::seconds(2), per_gpu(check_persistence)});
  }
  return checks;
}

}  // namespace gputrain::checks
