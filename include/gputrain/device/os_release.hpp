#pragma once
// /etc/os-release: which distribution and version this is.

#include <filesystem>
#include <string>
#include <string_view>

namespace gputrain::device {

/// The fields of os-release that reports use; empty when absent.
struct OsRelease {
  std::string id;           ///< e.g. "debian", "ubuntu"
  std::string version_id;   ///< e.g. "12", "24.04"
  std::string pretty_name;  ///< e.g. "Debian GNU/Linux 12 (bookworm)"
};

/// Parses os-release text (KEY=value lines, values optionally quoted with shell escapes).
OsRelease parse_os_release(std::string_view text);

/// Reads <root>/etc/os-release, falling back to <root>/usr/lib/os-release as systemd specifies.
OsRelease read_os_release(const std::filesystem::path& root = "/");

}  // namespace gputrain::device
