#include "gputrain/device/select.hpp"

#include <algorithm>
#include <cctype>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::device {
namespace {

std::string available_devices(const GpuInventory& inventory) {
  std::string list = "cpu";
  for (const auto& gpu : inventory.gpus) list += ", cuda:" + std::to_string(gpu.index) + " (" + gpu.name + ")";
  return list;
}

std::string why_no_gpu(const GpuInventory& inventory) {
  if (!inventory.driver.cuda_loaded) return inventory.driver.cuda_error;
  for (const auto& note : inventory.notes) {
    if (note.find("CUDA_VISIBLE_DEVICES") != std::string::npos) return note;
  }
  return "the driver reports no CUDA device";
}

}  // namespace

std::string DeviceChoice::str() const { return kind == Kind::cpu ? "cpu" : "cuda:" + std::to_string(index); }

bool is_device_spec(std::string_view spec) {
  if (spec == "auto" || spec == "cpu" || spec == "cuda") return true;
  return spec.size() > 5 && spec.substr(0, 5) == "cuda:" && spec.find_first_not_of("0123456789", 5) == std::string_view::npos;
}

// PyTorch and most tools say "cuda"; "gpu", "GPU:1", "cuda1" and "CPU" are the usual near-misses.
std::string near_device_spec(std::string_view text) {
  const auto lower = core::lower(std::string(text));
  if (lower == "cpu" || lower == "auto") return lower;  // "CPU", "Auto"
  std::string_view rest = lower;
  if (rest.substr(0, 3) == "gpu")
    rest.remove_prefix(3);
  else if (rest.substr(0, 4) == "cuda")
    rest.remove_prefix(4);
  else
    return "";
  if (!rest.empty() && rest.front() == ':') rest.remove_prefix(1);
  if (rest.find_first_not_of("0123456789") != std::string_view::npos) return "";
  return rest.empty() ? "cuda" : "cuda:" + std::string(rest);
}

DeviceChoice select_device(std::string_view spec, const GpuInventory& inventory) {
  const bool have_gpu = !inventory.gpus.empty();
  if (spec == "auto") return have_gpu ? DeviceChoice{DeviceChoice::Kind::cuda, 0} : DeviceChoice{};
  if (spec == "cpu") return DeviceChoice{};

  int index = 0;
  if (spec.substr(0, 5) == "cuda:") {
    const std::string_view digits = spec.substr(5);
    const bool numeric =
        !digits.empty() && digits.size() < 6 && std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
    if (!numeric) {
      throw UsageError("invalid device '" + std::string(spec) + "'", "write cuda:N with N a GPU number, e.g. cuda:0");
    }
    index = std::stoi(std::string(digits));
  } else if (spec != "cuda") {
    throw UsageError("unknown device '" + std::string(spec) + "'",
                     "use one of: auto, cpu, cuda, cuda:N (available here: " + available_devices(inventory) + ")");
  }
  if (!have_gpu) {
    throw EnvironmentError("device '" + std::string(spec) + "' asked for, but no CUDA GPU is usable here: " + why_no_gpu(inventory),
                           "run `gputrain verify` to see what is missing, or train on the CPU (device: cpu in the config, "
                           "--set device=cpu on the command line, --device cpu for quick-train)");
  }
  if (index >= int(inventory.gpus.size())) {
    throw UsageError("device 'cuda:" + std::to_string(index) + "' does not exist", "available here: " + available_devices(inventory));
  }
  return DeviceChoice{DeviceChoice::Kind::cuda, index};
}

}  // namespace gputrain::device
