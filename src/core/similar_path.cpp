#include "gputrain/core/similar_path.hpp"

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

}  // namespace

std::optional<std::string> similar_path(const std::string& path) {
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

std::string did_you_mean(const std::string& path) {
  const auto similar = similar_path(path);
  return similar ? " (did you mean '" + *similar + "'?)" : "";
}

}  // namespace gputrain::core
