// The parsers behind every config field (config_fields.hpp).
#include "config_fields.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <regex>
#include <utility>

#include "gputrain/core/duration.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/train/model_registry.hpp"

namespace gputrain::train::fields {

namespace {

// `text` as a number or list field would take it, when it is only spelt another way: 1,000
// (thousands marked), 0,001 (a decimal comma, as much of Europe writes it), (0.9, 0.999) (Python's
// tuple). Sizes and durations guess their own units.
std::string other_spelling(const std::string& text, const std::string& allowed) {
  const bool number = allowed.rfind("a number", 0) == 0;
  std::string out = text;
  std::smatch m;
  if (number && std::regex_match(text, m, std::regex("([0-9]+),([0-9]+)")) && (m[1] == "0" || m[2].length() != 3))
    return "; did you mean '" + m[1].str() + "." + m[2].str() + "'? (a decimal point, not a comma)";
  // A dash a word processor or a web page made of a minus: 1e–3 (U+2013), −0.5 (U+2212).
  const auto minus = std::regex_replace(text, std::regex("\xE2\x80\x93|\xE2\x80\x94|\xE2\x88\x92"), "-");
  char* end = nullptr;
  if (number && minus != text && (std::strtod(minus.c_str(), &end), *end == '\0'))
    return "; did you mean '" + minus + "'? (a dash where a minus belongs)";
  // 10% for a fraction (data.val_fraction: 0.1), 95% for a share in percent (95).
  if (number && std::regex_match(text, m, std::regex("([0-9]+(\\.[0-9]*)?) ?%"))) {
    const auto most = allowed.find("<= ");
    const bool fraction = most != std::string::npos && std::strtod(allowed.c_str() + most + 3, nullptr) <= 1;
    return "; did you mean '" + (fraction ? shortest(std::strtod(m[1].str().c_str(), nullptr) / 100) : m[1].str()) + "'?" +
           (fraction ? " (a fraction, not a percentage)" : "");
  }
  if (std::regex_match(text, std::regex("[0-9]{1,3}(,[0-9]{3})+(\\.[0-9]*)?")))
    out.erase(std::remove(out.begin(), out.end(), ','), out.end());
  else if (text.size() > 2 && text.front() == '(' && text.back() == ')')
    out = "[" + text.substr(1, text.size() - 2) + "]";
  return out == text ? "" : "; did you mean '" + out + "'?";
}

}  // namespace

std::string size_guess(const std::string& text) {  // 8gb, 512 mib, 1,5GB (a decimal comma), 8 Go (French octets)
  std::smatch m;
  if (!std::regex_match(text, m, std::regex("([0-9]+(?:[.,][0-9]+)?) *([kmgt])(i?)([bo])", std::regex::icase))) return "";
  const auto unit = static_cast<char>(std::toupper(static_cast<unsigned char>(m[2].str()[0])));
  const auto number = std::regex_replace(m[1].str(), std::regex(","), ".");
  const auto guess = number + unit + (m[3].length() ? "i" : "") + "B";
  return guess == text ? "" : "; did you mean '" + guess + "'?";
}

std::string duration_guess(const std::string& text) {  // 90min, 2 hours, 1,5h (a decimal comma)
  std::smatch m;
  if (std::regex_match(text, m, std::regex("([0-9]+),([0-9]+) *([smhd])", std::regex::icase)))
    return "; did you mean '" + m[1].str() + "." + m[2].str() + static_cast<char>(std::tolower(static_cast<unsigned char>(m[3].str()[0]))) +
           "'?";
  if (!std::regex_match(
          text, m,
          std::regex("([0-9.]+) *(sec|secs|second|seconds|min|mins|minute|minutes|hr|hrs|hour|hours|day|days)", std::regex::icase)))
    return "";
  return "; did you mean '" + m[1].str() + static_cast<char>(std::tolower(static_cast<unsigned char>(m[2].str()[0]))) + "'?";
}

[[noreturn]] void reject(const FieldValue& v, const std::string& found, const std::string& allowed, const std::string& guess) {
  const bool interpolation = found.rfind("'${", 0) == 0;  // OmegaConf's ${train.epochs}
  const auto spelt = guess.empty() && v.node.IsScalar() ? other_spelling(v.node.Scalar(), allowed) : "";
  throw UsageError(
      v.where + ": " + v.key + ": found " + found + "; allowed: " + allowed + guess + spelt,
      "set " + v.key + " to " + allowed +
          (interpolation ? "; ${...} is OmegaConf's and Hydra's interpolation, which gputrain does not resolve: write the value" : "") +
          " (docs/configuration.md)");
}

std::string found_text(const YAML::Node& node) {
  if (node.IsNull()) return "no value";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.size() == 0) return node.IsSequence() ? "an empty list" : "an empty mapping";
  return node.IsSequence() ? "a list" : "a mapping";
}

std::string scalar(const FieldValue& v, const std::string& allowed) {
  if (!v.node.IsScalar()) reject(v, found_text(v.node), allowed);
  return v.node.Scalar();
}

std::string shortest(double value) {
  for (int digits = 1; digits <= 17; ++digits) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    if (std::strtod(buf, nullptr) != value) continue;
    if (std::strchr(buf, 'e') != nullptr && std::fabs(value) >= 1 && std::fabs(value) < 1e15) {
      const int decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(value)))));
      std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    }
    return buf;
  }
  return std::to_string(value);
}

std::optional<long long> whole_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end == '\0') return errno == ERANGE ? std::nullopt : std::optional<long long>(value);
  std::string digits;
  for (const char c : text)
    if (c != '_') digits += c;
  const double number = std::strtod(digits.c_str(), &end);
  constexpr double kExactDoubles = 9007199254740992.0;  // 2^53: every whole number up to it is exact
  if (*end != '\0' || !std::isfinite(number) || number != std::floor(number) || std::abs(number) > kExactDoubles) return std::nullopt;
  return static_cast<long long>(number);
}

Int parse_int(const FieldValue& v, Int min, Int max) {
  return parse_int(v, "an integer >= " + std::to_string(min) + (max == kNoMax ? "" : " and <= " + std::to_string(max)), min, max);
}

Int parse_int(const FieldValue& v, const std::string& allowed, Int min, Int max) {
  const auto text = scalar(v, allowed);
  // 1.000 is one with a decimal point, and a thousand as German or Spanish group digits.
  if (std::regex_match(text, std::regex("[1-9][0-9]{0,2}(\\.000)+")))
    reject(
        v, found_text(v.node), allowed,
        "; did you mean '" + std::regex_replace(text, std::regex("\\."), "") + "'? (" +
            (text.find('.') == text.rfind('.') ? "'" + text + "' is " + text.substr(0, text.find('.')) + " with a decimal point; " : "") +
            "write whole numbers without a separator)");
  const auto value = whole_number(text);
  if (!value || *value < min || *value > max) reject(v, found_text(v.node), allowed);
  return *value;
}

double parse_double(const FieldValue& v, double min, double max) {
  const std::string allowed = "a number >= " + shortest(min) + (std::isinf(max) ? "" : " and <= " + shortest(max));
  const std::string text = scalar(v, allowed);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < min || value > max) reject(v, found_text(v.node), allowed);
  return value;
}

bool parse_bool(const FieldValue& v, const std::string& allowed) {
  // YAML's spellings (True and TRUE in 1.2; yes, on and theirs in 1.1, as PyYAML reads them).
  const std::string text = core::lower(scalar(v, allowed));
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off") return false;
  reject(v, found_text(v.node), allowed);
}

// Other tools' values for ours: Lightning's precision (16, "16-mixed", "bf16-true"), dtype names,
// PyTorch's scheduler classes (the part after the last '.' of torch.optim.lr_scheduler.StepLR).
constexpr std::pair<const char*, const char*> kOtherToolsValues[] = {
    {"16", "fp16-mixed"},
    {"16-mixed", "fp16-mixed"},
    {"half", "fp16-mixed"},
    {"float16", "fp16-mixed"},
    {"bf16-true", "bf16-mixed"},
    {"bfloat16", "bf16-mixed"},
    {"32", "fp32"},
    {"32-true", "fp32"},
    {"float32", "fp32"},
    {"float", "fp32"},
    {"tf32", "fp32"},
    {"steplr", "step"},
    {"cosineannealinglr", "cosine"},
    {"onecyclelr", "onecycle"},
    {"reducelronplateau", "plateau"},
};

std::string guess_choice(const std::string& text, const std::vector<std::string>& allowed) {
  const auto dot = text.rfind('.');
  const auto last = core::lower(dot == std::string::npos ? text : text.substr(dot + 1));  // torch.optim.AdamW
  for (const auto& [other, ours] : kOtherToolsValues)
    if (last == other && std::find(allowed.begin(), allowed.end(), ours) != allowed.end())
      return "; did you mean '" + std::string(ours) + "'?";
  std::vector<std::string> quoted;
  for (const auto& choice : core::likely_choices(last, allowed)) quoted.push_back("'" + choice + "'");
  if (quoted.empty()) return "";
  return quoted.size() == 1 ? "; did you mean " + quoted.front() + "?" : "; did you mean one of " + core::join(quoted) + "?";
}

std::string parse_choice(const FieldValue& v, const std::vector<std::string>& allowed) {
  std::string text = scalar(v, "one of " + core::join(allowed));
  for (const auto& a : allowed)
    if (text == a) return text;
  reject(v, found_text(v.node), "one of " + core::join(allowed), guess_choice(text, allowed));
}

// A text setting as gputrain hands it on (a path to open, a query to send, a name): a NUL
// ("\0" in a double-quoted YAML string) would end it there, and the rest would be dropped unsaid.
const std::string& text_of(const FieldValue& v, const YAML::Node& node) {
  const auto& text = node.Scalar();
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw UsageError(v.where + ": " + v.key + ": holds a NUL character (\\0) at position " + std::to_string(nul + 1) + " of " +
                         std::to_string(text.size()) + ", which would end the text there, dropping the rest unsaid",
                     "remove the \\0 from " + v.key);
  return text;
}

std::string parse_string(const FieldValue& v, const std::string& what) {
  if (!v.node.IsScalar()) reject(v, found_text(v.node), what);
  return text_of(v, v.node);
}

// "model.hidden[1]": what an error about one element of a list names.
std::string element_key(const FieldValue& v, std::size_t index) { return v.key + "[" + std::to_string(index) + "]"; }

std::vector<std::string> parse_string_list(const FieldValue& v, const std::string& allowed) {
  if (v.node.IsNull()) return {};                                                  // unset
  if (v.node.IsScalar() && !v.node.Scalar().empty()) return {text_of(v, v.node)};  // one name
  if (!v.node.IsSequence()) reject(v, found_text(v.node), allowed);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.node.size(); ++i) {
    const FieldValue item{v.node[i], v.where, element_key(v, i)};
    if (!item.node.IsScalar()) reject(item, found_text(item.node), "a name");
    out.push_back(text_of(item, item.node));
  }
  return out;
}

std::vector<double> parse_double_list(const FieldValue& v, double min, double max) {
  if (!v.node.IsSequence()) reject(v, found_text(v.node), "a list of numbers, e.g. [0.485, 0.456, 0.406]");
  std::vector<double> out;
  for (std::size_t i = 0; i < v.node.size(); ++i) out.push_back(parse_double(FieldValue{v.node[i], v.where, element_key(v, i)}, min, max));
  return out;
}

std::vector<Int> parse_int_list(const FieldValue& v, Int min, bool allow_empty) {
  const std::string allowed =
      std::string(allow_empty ? "a list" : "a non-empty list") + " of integers >= " + std::to_string(min) + ", e.g. [256, 128]";
  if (!v.node.IsSequence() || (!allow_empty && v.node.size() == 0)) reject(v, found_text(v.node), allowed);
  std::vector<Int> out;
  for (std::size_t i = 0; i < v.node.size(); ++i) out.push_back(parse_int(FieldValue{v.node[i], v.where, element_key(v, i)}, min));
  return out;
}

// A side past this is no image a network trains on whole (one 3 x 8192 x 8192 sample is 201 MB):
// refused here, before the products of sides and batch overflow or the allocator fails in its words.
constexpr Int kMaxImageSide = 8192;

std::vector<Int> parse_image_size(const FieldValue& v) {
  const std::string allowed = "[height, width], e.g. [224, 224], or one integer for a square, each side from 1 to " +
                              std::to_string(kMaxImageSide) + " (tile larger images)";
  std::vector<Int> size;
  if (!v.node.IsScalar()) {
    size = parse_int_list(v, 1, false);
  } else if (const auto side = whole_number(v.node.Scalar()); side && *side >= 1) {
    size = {*side, *side};
  }
  if (size.size() != 2 || size[0] > kMaxImageSide || size[1] > kMaxImageSide) reject(v, found_text(v.node), allowed);
  return size;
}

YAML::Node flow_list(const std::vector<Int>& values) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (Int x : values) list.push_back(x);
  list.SetStyle(YAML::EmitterStyle::Flow);
  return list;
}

}  // namespace gputrain::train::fields
