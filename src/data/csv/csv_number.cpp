#include "csv_number.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

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

// A cell's characters a report or a form puts around or inside a number, and what each is.
struct Decoration {
  std::string_view bytes;
  char stands_for;  // the ASCII it stands for in the number, or 0 for none
  const char* what;
};
constexpr Decoration kDecorations[] = {
    {"%", 0, "a percent sign"},
    {"$", 0, "a currency sign"},
    {"\xE2\x82\xAC", 0, "a currency sign"},  // €
    {"\xC2\xA3", 0, "a currency sign"},      // £
    {"\xC2\xA5", 0, "a currency sign"},      // ¥
    {"\xE2\x82\xB9", 0, "a currency sign"},  // ₹
    {"\xE2\x88\x92", '-', "a typeset minus sign (U+2212)"},
    {" ", 0, "digits grouped by spaces"},
    {"\xC2\xA0", 0, "digits grouped by spaces"},      // no-break space
    {"\xE2\x80\xAF", 0, "digits grouped by spaces"},  // narrow no-break space
    {"\xE2\x80\x89", 0, "digits grouped by spaces"},  // thin space
    {"\xEF\xBC\x8E", '.', "full-width digits"},
    {"\xEF\xBC\x8C", ',', "full-width digits"},
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<DecoratedNumber> decorated_number(std::string_view text, char delimiter) {
  std::string number;
  std::vector<const char*> had;
  const auto add = [&had](const char* what) {
    if (std::find(had.begin(), had.end(), what) == had.end()) had.push_back(what);
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto rest = text.substr(i);
    // Full-width digits U+FF10-FF19: EF BC 90-99.
    if (rest.size() >= 3 && rest.substr(0, 2) == "\xEF\xBC" && static_cast<unsigned char>(rest[2]) >= 0x90 &&
        static_cast<unsigned char>(rest[2]) <= 0x99) {
      number += static_cast<char>('0' + (static_cast<unsigned char>(rest[2]) - 0x90));
      add("full-width digits");
      i += 3;
      continue;
    }
    const auto found = std::find_if(std::begin(kDecorations), std::end(kDecorations),
                                    [&](const Decoration& d) { return rest.substr(0, d.bytes.size()) == d.bytes; });
    if (found == std::end(kDecorations)) {
      number += text[i++];
      continue;
    }
    i += found->bytes.size();
    if (found->stands_for) number += found->stands_for;
    // A space between digits groups them in threes ("1 234 567"); beside a sign ("45 %", "12 €")
    // it is a space; "12 34" is two numbers.
    const bool space = std::string_view(found->what) == "digits grouped by spaces";
    if (space && !number.empty() && is_digit(number.back()) && i < text.size() && is_digit(text[i])) {
      const auto group = text.substr(i, 4);
      if (group.size() < 3 || !std::all_of(group.begin(), group.begin() + 3, is_digit) || (group.size() == 4 && is_digit(group[3])))
        return std::nullopt;
      add(found->what);
    } else if (!space) {
      add(found->what);
    }
  }
  if (had.empty() || number.empty()) return std::nullopt;
  double value = 0;
  DecoratedNumber out;
  const auto kind = foreign_number(number, delimiter);
  // "1.234,50" as German and Spanish write it: points between groups of three, a decimal comma.
  const bool points_then_comma =
      std::count(number.begin(), number.end(), ',') == 1 && number.find('.') != std::string::npos && number.find('.') < number.find(',');
  if (points_then_comma) {
    std::string plain;
    for (const char c : number)
      if (c != '.') plain += c == ',' ? '.' : c;
    if (!parse_number(plain, value)) return std::nullopt;
  }
  if (kind == ForeignNumber::decimal_comma || points_then_comma) {
    out.decimal_comma = true;
    add("a decimal comma");
  } else if (!parse_number(number, value) && kind != ForeignNumber::thousands_separators) {
    return std::nullopt;
  }
  for (std::size_t k = 0; k < had.size(); ++k) out.what += (k == 0 ? "" : k + 1 == had.size() ? " and " : ", ") + std::string(had[k]);
  return out;
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
