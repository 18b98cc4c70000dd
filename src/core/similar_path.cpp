#include "gputrain/core/similar_path.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::core {
namespace {

namespace fs = std::filesystem;

// Enough for any folder a person names by hand; a folder of a million images is not read through.
constexpr std::size_t kMostNamesRead = 10000;

std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(folder.empty() ? fs::path(".") : folder, ec), end; !ec && it != end && names.size() < kMostNamesRead;
       it.increment(ec))
    names.push_back(it->path().filename().string());
  return names;
}

std::string digits_masked(std::string name) {
  for (auto& c : name)
    if (c >= '0' && c <= '9') c = '#';
  return name;
}

// The name in `names` that `name` most likely meant: the same in another case, else the closest
// typo. Names that differ from it in their digits alone are other files of a series
// (step-00000006.pt, part-0004.csv, 2026-11-23.log), not the one meant.
std::optional<std::string> meant(const std::string& name, const std::vector<std::string>& names) {
  std::vector<std::string> candidates;
  for (const auto& candidate : names) {
    if (lower(candidate) == lower(name)) return candidate;
    if (digits_masked(candidate) != digits_masked(name)) candidates.push_back(candidate);
  }
  return closest_match(name, candidates);
}

bool has_drive_letter(const std::string& path) {
  return path.size() >= 2 && path[1] == ':' && ((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z')) &&
         (path.size() == 2 || path[2] == '\\' || path[2] == '/');
}

// `path` as this system writes it, when Windows or a browser wrote it: 'sub\d.csv' -> 'sub/d.csv',
// 'file:///data/x%20y.csv' -> '/data/x y.csv'; nullopt when it is written as here already.
std::optional<std::string> posix_spelling(const std::string& path) {
  std::string out = path;
  if (out.rfind("file://", 0) == 0) {
    out = out.substr(7);
    std::string decoded;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i] == '%' && i + 2 < out.size() && std::isxdigit(static_cast<unsigned char>(out[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(out[i + 2]))) {
        decoded += static_cast<char>(std::stoi(out.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += out[i];
      }
    }
    out = decoded;
  }
  std::replace(out.begin(), out.end(), '\\', '/');
  if (out == path || has_drive_letter(out)) return std::nullopt;
  return out;
}

std::optional<std::string> typo_corrected(const std::string& path) {
  std::vector<fs::path> parts;
  for (const auto& part : fs::path(path))
    if (!part.empty()) parts.push_back(part);
  std::error_code ec;
  fs::path corrected;
  int corrections = 0;
  for (const auto& part : parts) {
    const auto next = corrected / part;
    if (fs::exists(next, ec)) {
      corrected = next;
      continue;
    }
    const auto name = meant(part.string(), names_in(corrected));
    if (!name || ++corrections > 3) return std::nullopt;
    corrected /= *name;
  }
  if (corrections == 0 || !fs::exists(corrected, ec)) return std::nullopt;
  return corrected.string();
}

}  // namespace

std::optional<std::string> similar_path(const std::string& path) {
  if (const auto posix = posix_spelling(path)) {
    std::error_code ec;
    if (fs::exists(*posix, ec)) return posix;
    if (const auto corrected = typo_corrected(*posix)) return corrected;
  }
  return typo_corrected(path);
}

std::string foreign_path_note(const std::string& path) {
  if (has_drive_letter(path))
    return "; '" + path.substr(0, 2) + "' names a Windows drive, which this system has not: its paths start at /, folders separated by /";
  if (const auto start = path.find('%'); start != std::string::npos && path.find('%', start + 2) != std::string::npos)
    return "; %NAME% is Windows' way to name a variable: write $NAME";
  if (path.find('\\') != std::string::npos) return "; '\\' separates folders on Windows: on this system '/' does";
  if (path.rfind("file://", 0) == 0) return "; a path is wanted, not a file:// address: the part after file://";
  return "";
}

std::string did_you_mean(const std::string& path) {
  const auto similar = similar_path(path);
  if (similar) return " (did you mean '" + *similar + "'?)";
  const auto note = foreign_path_note(path);
  return note.empty() ? "" : " (" + note.substr(2) + ")";
}

}  // namespace gputrain::core
