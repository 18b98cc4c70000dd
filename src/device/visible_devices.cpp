#include "gputrain/device/visible_devices.hpp"

#include <algorithm>
#include <cctype>

#include "gputrain/core/units.hpp"

namespace gputrain::device {
namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    parts.push_back(trim(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.compare(0, prefix.size(), prefix) == 0; }

// UUID entries match a unique prefix of "GPU-<uuid>"; the "GPU-" itself may be left out.
std::vector<int> match_uuid(const std::string& entry, const std::vector<PhysicalGpu>& gpus) {
  std::string wanted = core::lower(entry);
  if (!starts_with(wanted, "gpu-")) wanted = "gpu-" + wanted;
  std::vector<int> matches;
  for (const auto& gpu : gpus) {
    if (starts_with(core::lower(gpu.uuid), wanted)) matches.push_back(gpu.index);
  }
  return matches;
}

std::string hidden_after(const std::vector<std::string>& entries, std::size_t position) {
  if (position + 1 >= entries.size()) return "";
  std::string rest;
  for (std::size_t i = position + 1; i < entries.size(); ++i) rest += (rest.empty() ? "" : ",") + entries[i];
  return "; the entries after it (" + rest + ") are hidden too";
}

}  // namespace

VisibleDevices parse_cuda_visible_devices(const std::optional<std::string>& value, const std::vector<PhysicalGpu>& gpus) {
  VisibleDevices result;
  if (!value) {
    for (const auto& gpu : gpus) result.physical.push_back(gpu.index);
    return result;
  }
  result.restricted = true;
  if (trim(*value).empty()) {
    result.problems.push_back("CUDA_VISIBLE_DEVICES is set but empty: every GPU is hidden");
    return result;
  }
  const auto entries = split_commas(*value);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& entry = entries[i];
    std::string problem;
    int index = -1;
    if (all_digits(entry)) {
      index = std::stoi(entry.size() > 9 ? std::string("999999999") : entry);
      const bool exists = std::any_of(gpus.begin(), gpus.end(), [&](const PhysicalGpu& g) { return g.index == index; });
      if (!exists) problem = "GPU " + entry + " does not exist (this machine has " + std::to_string(gpus.size()) + ")";
    } else if (starts_with(core::lower(entry), "mig-")) {
      result.mig.push_back(entry);
      continue;
    } else if (entry.empty() || (entry[0] == '-' && all_digits(entry.substr(1)))) {
      problem = entry.empty() ? "empty entry" : "'" + entry + "' is not a GPU (a common way to hide all GPUs)";
    } else {
      const auto matches = match_uuid(entry, gpus);
      if (matches.empty())
        problem = "no GPU has a UUID starting with '" + entry + "'";
      else if (matches.size() > 1)
        problem = "'" + entry + "' matches the UUIDs of several GPUs";
      else
        index = matches.front();
    }
    if (problem.empty() && std::find(result.physical.begin(), result.physical.end(), index) != result.physical.end()) {
      problem = "GPU " + std::to_string(index) + " is listed twice";
    }
    if (!problem.empty()) {
      result.problems.push_back("CUDA_VISIBLE_DEVICES entry " + std::to_string(i + 1) + ": " + problem + hidden_after(entries, i));
      break;
    }
    result.physical.push_back(index);
  }
  return result;
}

DeviceOrderSetting parse_cuda_device_order(const std::optional<std::string>& value) {
  DeviceOrderSetting setting;
  if (!value || value->empty() || *value == "FASTEST_FIRST") return setting;
  if (*value == "PCI_BUS_ID") {
    setting.order = DeviceOrder::pci_bus_id;
    return setting;
  }
  setting.problem = "CUDA_DEVICE_ORDER='" + *value + "' is not FASTEST_FIRST or PCI_BUS_ID; CUDA uses FASTEST_FIRST";
  return setting;
}

NvidiaVisibleDevices parse_nvidia_visible_devices(const std::optional<std::string>& value) {
  NvidiaVisibleDevices result;
  if (!value) return result;
  const std::string text = trim(*value);
  if (text.empty() || text == "void") {
    result.kind = NvidiaVisibleDevices::Kind::void_;
  } else if (text == "all") {
    result.kind = NvidiaVisibleDevices::Kind::all;
  } else if (text == "none") {
    result.kind = NvidiaVisibleDevices::Kind::none;
  } else {
    result.kind = NvidiaVisibleDevices::Kind::list;
    for (auto& entry : split_commas(text)) {
      if (!entry.empty()) result.entries.push_back(entry);
    }
  }
  return result;
}

}  // namespace gputrain::device
