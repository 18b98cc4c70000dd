#include "csv_number.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>

namespace gputrain::data::csv {

// Clinger's fast path (1990), for the decimals CSV files hold ("-0.132105", "1.5e3"): when the
// digits make an integer m < 2^53 and the decimal exponent e is within +-22, both m and 10^|e| are
// exact doubles, so one IEEE multiplication or division gives the correctly rounded value, as
// strtod does. Parsing is most of reading a CSV, and this is about three times faster than
// std::from_chars on such cells.
const char* parse_short_decimal(const char* p, const char* end, double& value) {
  const bool negative = p != end && *p == '-';
  if (negative) ++p;
  std::uint64_t mantissa = 0;
  int digits = 0, exponent = 0;
  const auto is_digit = [](char c) { return static_cast<unsigned>(c - '0') < 10; };
  const char* const integer = p;
  for (; p != end && is_digit(*p); ++p, ++digits) mantissa = mantissa * 10 + static_cast<unsigned>(*p - '0');
  bool any_digit = p != integer;
  if (p != end && *p == '.') {
    const char* const fraction = ++p;
    for (; p != end && is_digit(*p); ++p, ++digits) mantissa = mantissa * 10 + static_cast<unsigned>(*p - '0');
    exponent = -static_cast<int>(p - fraction);
    any_digit = any_digit || p != fraction;
  }
  if (!any_digit || digits > 19) return nullptr;  // 19 digits cannot overflow 64 bits
  if (p != end && (*p == 'e' || *p == 'E')) {
    ++p;
    const bool negative_exponent = p != end && *p == '-';
    if (p != end && (*p == '-' || *p == '+')) ++p;
    const char* const start = p;
    int e = 0;
    for (; p != end && is_digit(*p) && e < 1000; ++p) e = e * 10 + (*p - '0');
    if (p == start) return nullptr;
    exponent += negative_exponent ? -e : e;
  }
  if (mantissa > (std::uint64_t{1} << 53) || exponent < -22 || exponent > 22) return nullptr;
  static constexpr double kPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const auto magnitude = static_cast<double>(mantissa);
  const double v = exponent < 0 ? magnitude / kPowers[-exponent] : magnitude * kPowers[exponent];
  value = negative ? -v : v;
  return p;
}

bool parse_number(std::string_view text, double& value) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (!text.empty() && (text.front() == '+' || text.front() == '-')) return false;
  }
  if (text.empty()) return false;
  if (parse_short_decimal(text.data(), text.data() + text.size(), value) == text.data() + text.size()) return true;
  // std::from_chars needs no NUL-terminated copy and no locale.
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end != text.data() + text.size()) return false;
  if (error == std::errc::result_out_of_range) {
    // Beyond a double: 1e-400 is 0 as float32 stores it; 1e400 is infinite, which the finite
    // checks then refuse with their own message.
    value = std::strtod(std::string(text).c_str(), nullptr);
    return true;
  }
  return error == std::errc();
}

ForeignNumber foreign_number(std::string_view text, char delimiter) {
  std::size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const auto digits = [&] {  // how many digits from i on, moving past them
    const auto start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  const auto first = digits();
  if (first == 0 || i == text.size() || text[i] != ',') return ForeignNumber::none;
  // One comma and digits after it, nothing else: "3,5", "-0,25", "1,234".
  const auto after_comma = i + 1;
  ++i;
  const auto fraction = digits();
  if (fraction > 0 && i == text.size() && (delimiter != ',' || fraction != 3 || first > 3)) return ForeignNumber::decimal_comma;
  // Groups of three digits after commas, then maybe a decimal point: "1,234", "12,345,678.5".
  i = after_comma;
  if (first > 3) return ForeignNumber::none;
  while (true) {
    if (digits() != 3) return ForeignNumber::none;
    if (i == text.size()) return ForeignNumber::thousands_separators;
    if (text[i] == '.') {
      ++i;
      digits();
      return i == text.size() ? ForeignNumber::thousands_separators : ForeignNumber::none;
    }
    if (text[i] != ',') return ForeignNumber::none;
    ++i;
  }
}

namespace {

// Reads [min, max] digits at text[i] on, moving i past them; false (i unmoved) when fewer or more.
bool digits(std::string_view text, std::size_t& i, std::size_t min, std::size_t max) {
  auto j = i;
  while (j < text.size() && j - i <= max && text[j] >= '0' && text[j] <= '9') ++j;
  if (j - i < min || j - i > max) return false;
  i = j;
  return true;
}

bool next_is(std::string_view text, std::size_t i, char c) { return i < text.size() && text[i] == c; }

// "14:05", "14:05:00", "14:05:00.123", then an optional "Z", "+01:00" or "-0130".
bool time_at(std::string_view text, std::size_t i) {
  if (!digits(text, i, 1, 2) || !next_is(text, i, ':') || !digits(text, ++i, 2, 2)) return false;
  if (next_is(text, i, ':')) {
    if (!digits(text, ++i, 2, 2)) return false;
    if (next_is(text, i, '.') && !digits(text, ++i, 1, 9)) return false;
  }
  if (next_is(text, i, 'Z')) return i + 1 == text.size();
  if (next_is(text, i, '+') || next_is(text, i, '-')) {
    if (!digits(text, ++i, 2, 4)) return false;
    if (next_is(text, i, ':') && !digits(text, ++i, 2, 2)) return false;
  }
  return i == text.size();
}

}  // namespace

bool is_date_or_time(std::string_view text) {
  std::size_t i = 0;
  // Year first ("2024-03-01") or last ("01/03/2024", "1.3.24"), one separator throughout.
  const bool year_first = digits(text, i, 4, 4);
  if (!year_first && !digits(text, i, 1, 2)) return false;
  if (!year_first && next_is(text, i, ':')) return time_at(text, 0);
  if (i == text.size()) return false;
  const char separator = text[i];
  if (separator != '-' && separator != '/' && separator != '.') return false;
  if (!digits(text, ++i, 1, 2) || !next_is(text, i, separator)) return false;
  ++i;
  if (year_first ? !digits(text, i, 1, 2) : !(digits(text, i, 4, 4) || digits(text, i, 2, 2))) return false;
  if (i == text.size()) return true;
  return (text[i] == ' ' || text[i] == 'T') && time_at(text, i + 1);
}

bool is_missing(std::string_view text) {
  // pandas' default na_values (pandas.read_csv's documentation), the empty cell among them.
  static constexpr std::string_view kMarkers[] = {"",     "#N/A",   "#N/A N/A", "#NA",  "-1.#IND", "-1.#QNAN", "-NaN",
                                                  "-nan", "1.#IND", "1.#QNAN",  "<NA>", "N/A",     "NA",       "NULL",
                                                  "NaN",  "None",   "n/a",      "nan",  "null"};
  return std::find(std::begin(kMarkers), std::end(kMarkers), text) != std::end(kMarkers);
}

bool parse_boolean(std::string_view text, double& value) {
  if (text == "True" || text == "TRUE" || text == "true") {
    value = 1;
    return true;
  }
  if (text == "False" || text == "FALSE" || text == "false") {
    value = 0;
    return true;
  }
  return false;
}

}  // namespace gputrain::data::csv
