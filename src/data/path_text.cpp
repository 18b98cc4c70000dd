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

UsageError not_a_folder(const std::string& path, const std::string& fix) {
  namespace fs = std::filesystem;
  const auto ends_with = [&](const std::string& suffix) {
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  std::string unpack;
  if (ends_with(".zip")) unpack = "unzip " + path;
  for (const char* suffix : {".tar", ".tar.gz", ".tgz", ".tar.xz"})
    if (ends_with(suffix)) unpack = "tar xf " + path;
  std::error_code ec;
  if (!unpack.empty() && fs::is_regular_file(path, ec))
    return UsageError("'" + path + "' is not a folder but an archive", "unpack it (" + unpack + "), then point data.path at the folder it makes");
  return UsageError(unusable_path_text(path, "'" + path + "' is not a folder"), fix);
}

}  // namespace gputrain::data
