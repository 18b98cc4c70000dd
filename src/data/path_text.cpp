#include "path_text.hpp"

#include <filesystem>
#include <system_error>

#include "gputrain/core/similar_path.hpp"

namespace gputrain::data {

std::string unusable_path_text(const std::string& path, const std::string& otherwise) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) || path.empty()) return otherwise;
  std::string text = "'" + path + "' does not exist";
  if (fs::path(path).is_relative()) {
    const auto here = fs::current_path(ec);
    if (!ec) text += " (relative to the current folder " + here.string() + ", not to the config file)";
  }
  if (const auto similar = core::similar_path(path)) text += "; did you mean '" + *similar + "'?";
  return text;
}

}  // namespace gputrain::data
