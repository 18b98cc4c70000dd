#include "gputrain/device/os_release.hpp"

#include <fstream>
#include <sstream>

namespace gputrain::device {
namespace {

// os-release values follow shell quoting: "..." or '...', with backslash escapes in double quotes.
std::string unquote(std::string_view value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
    const char quote = value.front();
    value = value.substr(1, value.size() - 2);
    std::string out;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (quote == '"' && value[i] == '\\' && i + 1 < value.size()) ++i;
      out += value[i];
    }
    return out;
  }
  return std::string(value);
}

}  // namespace

OsRelease parse_os_release(std::string_view text) {
  OsRelease release;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const std::string value = unquote(std::string_view(line).substr(eq + 1));
    if (key == "ID")
      release.id = value;
    else if (key == "VERSION_ID")
      release.version_id = value;
    else if (key == "PRETTY_NAME")
      release.pretty_name = value;
  }
  return release;
}

OsRelease read_os_release(const std::filesystem::path& root) {
  for (const char* candidate : {"etc/os-release", "usr/lib/os-release"}) {
    std::ifstream file(root / candidate);
    if (file) {
      std::stringstream content;
      content << file.rdbuf();
      return parse_os_release(content.str());
    }
  }
  return {};
}

}  // namespace gputrain::device
