#include "gputrain/core/units.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gputrain::core {

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<const char*, 6> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " B";
  return format_fixed(value, 2) + " " + kUnits[unit];
}

std::string format_fixed(double value, int decimals) {
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.*f", decimals, value);
  return buffer.data();
}

std::optional<std::uint64_t> parse_bytes(const std::string& text) {
  struct Unit {
    const char* name;
    double bytes;
  };
  // Single letters and "iB" suffixes are binary (as nvidia-smi and Kubernetes' Gi mean); "KB",
  // "MB", "GB", "TB" are decimal.
  static constexpr std::array<Unit, 17> kUnits = {{{"", 1.0},
                                                   {"B", 1.0},
                                                   {"K", 0x1p10},
                                                   {"KiB", 0x1p10},
                                                   {"Ki", 0x1p10},
                                                   {"KB", 1e3},
                                                   {"M", 0x1p20},
                                                   {"MiB", 0x1p20},
                                                   {"Mi", 0x1p20},
                                                   {"MB", 1e6},
                                                   {"G", 0x1p30},
                                                   {"GiB", 0x1p30},
                                                   {"Gi", 0x1p30},
                                                   {"GB", 1e9},
                                                   {"T", 0x1p40},
                                                   {"TiB", 0x1p40},
                                                   {"TB", 1e12}}};
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value) || value < 0 || *begin == '-' || *begin == '+') return std::nullopt;
  std::string suffix(end);
  while (!suffix.empty() && std::isspace(static_cast<unsigned char>(suffix.front()))) suffix.erase(0, 1);
  for (const auto& unit : kUnits) {
    if (suffix != unit.name) continue;
    const double bytes = value * unit.bytes;
    if (bytes >= 0x1p63) return std::nullopt;
    if (unit.bytes == 1.0 && value != std::floor(value)) return std::nullopt;  // "1.5" bytes
    return static_cast<std::uint64_t>(bytes);
  }
  return std::nullopt;
}

std::string with_commas(std::uint64_t count) {
  std::string digits = std::to_string(count);
  for (auto i = static_cast<std::ptrdiff_t>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

std::string format_parameter_count(std::int64_t count) {
  if (count >= 1000000) return format_fixed(static_cast<double>(count) / 1e6, 2) + " M parameters";
  return with_commas(static_cast<std::uint64_t>(std::max<std::int64_t>(count, 0))) + (count == 1 ? " parameter" : " parameters");
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string counted(std::int64_t count, const std::string& noun) {
  if (count == 1) return "1 " + noun;
  const auto ends_with = [&](const char* tail) {
    const std::string t(tail);
    return noun.size() >= t.size() && noun.compare(noun.size() - t.size(), t.size(), t) == 0;
  };
  // class -> classes, batch -> batches; but epoch -> epochs (its "ch" is a k)
  const bool sibilant = ends_with("s") || ends_with("x") || ends_with("sh") || ends_with("tch");
  return std::to_string(count) + " " + noun + (sibilant ? "es" : "s");
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : separator) + word;
  return out;
}

std::string join_first(const std::vector<std::string>& words, std::size_t most, const std::string& separator) {
  if (words.size() <= most) return join(words, separator);
  return join(std::vector<std::string>(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(most)), separator) + separator + "... (" +
         std::to_string(words.size()) + " in all)";
}

std::string join_some(const std::vector<std::string>& words, std::size_t most) {
  if (words.size() <= most) return join(words);
  const auto shown = join(std::vector<std::string>(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(most)));
  return (shown.empty() ? "" : shown + " and ") + std::to_string(words.size() - most) + " more";
}

}  // namespace gputrain::core
