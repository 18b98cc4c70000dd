#include "gputrain/core/duration.hpp"

#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace gputrain::core {
namespace {

// An unsigned decimal number at `p` ("12", "1.5"); advances `p` past it. No sign, no exponent:
// "1e3h" is not how anyone writes a duration.
std::optional<double> read_number(const char*& p) {
  const char* start = p;
  while (std::isdigit(static_cast<unsigned char>(*p)) || *p == '.') ++p;
  if (p == start) return std::nullopt;
  const std::string digits(start, p);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(digits.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

// "1h30m", "1d 12h": each unit once, largest first.
std::optional<double> parse_units(const std::string& text) {
  static constexpr std::array<std::pair<char, double>, 4> kUnits = {{{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}};
  const char* p = text.c_str();
  double seconds = 0;
  std::size_t next_unit = 0;  // units must come largest first, each once
  bool any = false;
  while (*p != '\0') {
    while (*p == ' ') ++p;
    const auto value = read_number(p);
    if (!value) return std::nullopt;
    std::size_t unit = next_unit;
    while (unit < kUnits.size() && kUnits[unit].first != *p) ++unit;
    if (unit == kUnits.size()) return std::nullopt;
    seconds += *value * kUnits[unit].second;
    next_unit = unit + 1;
    any = true;
    ++p;
    while (*p == ' ') ++p;
  }
  if (!any) return std::nullopt;
  return seconds;
}

// "2:30:00", "1-12:00:00" (SLURM), "00:12:00:00" (Lightning: days first).
std::optional<double> parse_clock(const std::string& text) {
  const char* p = text.c_str();
  double days = 0;
  if (const auto dash = text.find('-'); dash != std::string::npos) {
    const auto value = read_number(p);
    if (!value || *p != '-' || *value != std::floor(*value)) return std::nullopt;
    days = *value;
    ++p;
  }
  std::vector<double> fields;
  while (true) {
    const auto value = read_number(p);
    if (!value) return std::nullopt;
    fields.push_back(*value);
    if (*p == '\0') break;
    if (*p != ':') return std::nullopt;
    ++p;
  }
  // H:MM:SS, or DD:HH:MM:SS without a dash; "MM:SS" is left out (minutes or hours? tools differ).
  if (fields.size() == 4 && days == 0) {
    days = fields.front();
    fields.erase(fields.begin());
  }
  if (fields.size() != 3) return std::nullopt;
  for (std::size_t i = 0; i < 2; ++i)
    if (fields[i] != std::floor(fields[i])) return std::nullopt;  // only the seconds may have decimals
  if (fields[1] >= 60 || fields[2] >= 60) return std::nullopt;
  return days * 86400 + fields[0] * 3600 + fields[1] * 60 + fields[2];
}

}  // namespace

std::optional<double> parse_duration(const std::string& text) {
  if (text.find(':') != std::string::npos) return parse_clock(text);
  return parse_units(text);
}

std::string duration_text(double seconds) {
  if (!(seconds > 0)) return "0s";
  if (seconds != std::floor(seconds) || seconds >= 1e15) {
    std::array<char, 32> buffer{};
    std::snprintf(buffer.data(), buffer.size(), "%gs", seconds);
    return buffer.data();
  }
  auto left = static_cast<long long>(seconds);
  std::string text;
  for (const auto& [unit, size] : {std::pair{"d", 86400LL}, std::pair{"h", 3600LL}, std::pair{"m", 60LL}, std::pair{"s", 1LL}}) {
    if (left >= size) text += std::to_string(left / size) + unit;
    left %= size;
  }
  return text;
}

}  // namespace gputrain::core
