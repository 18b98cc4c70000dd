#pragma once
// Are we inside a container, and which kind? Decides which verify advice applies (pass GPUs into
// the container vs install the NVIDIA Container Toolkit on the host).

#include <filesystem>
#include <string>
#include <vector>

namespace gputrain::device {

/// Whether this process runs in a container, the runtime when it can be told, and the evidence.
struct ContainerInfo {
  bool inside = false;
  std::string runtime;                ///< "docker", "podman", "kubernetes", "containerd", "lxc", or ""
  std::vector<std::string> evidence;  ///< what gave it away, e.g. "/.dockerenv exists"
};

/// Looks for /.dockerenv, /run/.containerenv, the `container` and KUBERNETES_SERVICE_HOST
/// variables, and container names in <root>/proc/1/cgroup.
ContainerInfo detect_container(const std::filesystem::path& root = "/");

}  // namespace gputrain::device
