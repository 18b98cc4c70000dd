#include "gputrain/device/container.hpp"

#include <array>
#include <fstream>
#include <sstream>
#include <utility>

#include "gputrain/core/env.hpp"

namespace gputrain::device {

ContainerInfo detect_container(const std::filesystem::path& root) {
  ContainerInfo info;
  auto found = [&](const std::string& runtime, std::string evidence) {
    info.inside = true;
    if (info.runtime.empty()) info.runtime = runtime;
    info.evidence.push_back(std::move(evidence));
  };
  std::error_code ec;
  if (std::filesystem::exists(root / ".dockerenv", ec)) found("docker", "/.dockerenv exists");
  if (std::filesystem::exists(root / "run/.containerenv", ec)) found("podman", "/run/.containerenv exists");
  if (auto value = core::env("container"); value && !value->empty()) found(*value, "container=" + *value + " is set");
  if (core::env("KUBERNETES_SERVICE_HOST")) found("kubernetes", "KUBERNETES_SERVICE_HOST is set");

  std::ifstream init_cgroup(root / "proc/1/cgroup");
  std::stringstream content;
  content << init_cgroup.rdbuf();
  const std::string text = content.str();
  constexpr std::array<std::pair<const char*, const char*>, 4> kMarkers = {
      {{"/docker", "docker"}, {"/kubepods", "kubernetes"}, {"/containerd", "containerd"}, {"/lxc", "lxc"}}};
  for (const auto& [marker, runtime] : kMarkers) {
    if (text.find(marker) != std::string::npos) found(runtime, std::string("/proc/1/cgroup mentions ") + (marker + 1));
  }
  return info;
}

}  // namespace gputrain::device
