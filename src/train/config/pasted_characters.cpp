#include "pasted_characters.hpp"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "gputrain/core/error.hpp"

namespace gputrain::train {
namespace {

struct Pasted {
  std::string_view bytes;
  const char* name;
};

// Spaces YAML does not take as spaces: each is part of the text around it.
constexpr Pasted kSpaces[] = {
    {"\xC2\xA0", "a no-break space (U+00A0)"},
    {"\xE2\x80\xAF", "a narrow no-break space (U+202F)"},
    {"\xE2\x80\x87", "a figure space (U+2007)"},
    {"\xE2\x80\x89", "a thin space (U+2009)"},
    {"\xE2\x80\x8B", "a zero-width space (U+200B)"},
    {"\xE2\x80\x8C", "a zero-width non-joiner (U+200C)"},
    {"\xE2\x80\x8D", "a zero-width joiner (U+200D)"},
    {"\xE2\x81\xA0", "a word joiner (U+2060)"},
    {"\xEF\xBB\xBF", "a zero-width no-break space (U+FEFF)"},
    {"\xE3\x80\x80", "an ideographic space (U+3000)"},
};

// Quotes a word processor or a chat puts for " and ', which YAML reads as text.
constexpr Pasted kQuotes[] = {
    {"\xE2\x80\x9C", "a typographic quote (\xE2\x80\x9C, U+201C)"},
    {"\xE2\x80\x9D", "a typographic quote (\xE2\x80\x9D, U+201D)"},
    {"\xE2\x80\x98", "a typographic quote (\xE2\x80\x98, U+2018)"},
    {"\xE2\x80\x99", "a typographic quote (\xE2\x80\x99, U+2019)"},
    {"\xE2\x80\x9E", "a typographic quote (\xE2\x80\x9E, U+201E)"},
    {"\xC2\xAB", "a guillemet (\xC2\xAB, U+00AB)"},
    {"\xC2\xBB", "a guillemet (\xC2\xBB, U+00BB)"},
};

constexpr std::string_view kFullWidthColon = "\xEF\xBC\x9A";

template <std::size_t N>
const Pasted* starting(std::string_view rest, const Pasted (&table)[N]) {
  const auto* found =
      std::find_if(std::begin(table), std::end(table), [&](const Pasted& p) { return rest.substr(0, p.bytes.size()) == p.bytes; });
  return found == std::end(table) ? nullptr : found;
}

std::size_t character_bytes(unsigned char lead) { return lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

bool is_key_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// The key before position `at` of `line` ("  - model" -> "model"), when all before it is one.
std::string key_before(std::string_view line, std::size_t at) {
  auto head = line.substr(0, at);
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  auto start = head.find_first_not_of(' ');
  if (start == std::string_view::npos) return "";
  if (head.substr(start, 2) == "- ") start = head.find_first_not_of(' ', start + 2);
  const auto key = head.substr(start);
  return !key.empty() && std::all_of(key.begin(), key.end(), is_key_character) ? std::string(key) : "";
}

// A line that ends (before a comment) in a block scalar's header: "query: |", "- >-".
bool opens_block_scalar(std::string_view content) {
  while (!content.empty() &&
         (content.back() == ' ' || content.back() == '-' || content.back() == '+' || (content.back() >= '0' && content.back() <= '9')))
    content.remove_suffix(1);
  if (content.empty() || (content.back() != '|' && content.back() != '>')) return false;
  content.remove_suffix(1);
  return content.empty() || content.back() == ' ';
}

class Scanner {
 public:
  Scanner(const std::string& origin, bool one_value) : origin_(origin), one_value_(one_value) {}

  void line(std::string_view text, int number, bool first) {
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    const auto indent = static_cast<int>(std::min(text.find_first_not_of(' '), text.size()));
    if (block_indent_ >= 0 && (indent == static_cast<int>(text.size()) || indent > block_indent_)) return;  // a block's text
    block_indent_ = -1;
    bool value_start = true;  // where " or ' would open a quoted string
    std::size_t i = 0, end = text.size();
    for (int column = 1; i < text.size(); ++column) {
      const auto c = text[i];
      const auto length = std::min(character_bytes(static_cast<unsigned char>(c)), text.size() - i);
      if (quote_) {
        if (c == '\\' && quote_ == '"') {
          i += 2;
          continue;
        }
        if (c == quote_ && quote_ == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          i += 2;
          continue;
        }
        if (c == quote_) quote_ = 0;
        i += length;
        continue;
      }
      if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
        end = i;
        break;
      }
      const auto rest = text.substr(i);
      if (const auto* space = starting(rest, kSpaces); space && !(first && i == 0 && space->bytes == "\xEF\xBB\xBF"))
        refuse_space(*space, number, column);
      if (const auto* typographic = starting(rest, kQuotes); typographic && value_start) refuse_quote(*typographic, number, column);
      if (rest.substr(0, kFullWidthColon.size()) == kFullWidthColon) {
        if (const auto key = key_before(text, i); !key.empty()) refuse_colon(key, number, column);
      }
      if ((c == '"' || c == '\'') && value_start) {
        quote_ = c;
      } else if (c == '[' || c == '{' || c == ',') {
        value_start = true;
      } else if ((c == ':' || c == '-' || c == '?') && (i + 1 == text.size() || text[i + 1] == ' ')) {
        value_start = c == ':' || value_start;
      } else if (c != ' ' && c != '\t') {
        value_start = false;
      }
      i += length;
    }
    if (!quote_ && opens_block_scalar(text.substr(0, end))) block_indent_ = indent;
  }

 private:
  std::string at(int line, int column) const {
    return one_value_ ? origin_ : origin_ + ":" + std::to_string(line) + ":" + std::to_string(column);
  }
  [[noreturn]] void refuse_space(const Pasted& space, int line, int column) const {
    const bool invisible = std::string_view(space.name).find("zero-width") != std::string_view::npos ||
                           std::string_view(space.name).find("joiner") != std::string_view::npos;
    std::string escaped;
    for (const char b : space.bytes) escaped += "\\x" + std::string(1, "0123456789abcdef"[(b >> 4) & 0xF]) + "0123456789abcdef"[b & 0xF];
    throw UsageError(at(line, column) + ": " + space.name +
                         ", which a copy from a web page, a chat or a word processor brings: YAML reads it as part of the "
                         "text around it, not as a space that indents or separates",
                     (invisible ? "remove it" : "replace it with a plain space") +
                         (one_value_ ? std::string(": type the value again")
                                     : " (every one: sed -i 's/" + escaped + "/" + (invisible ? "" : " ") + "/g' " + origin_ + ")"));
  }
  [[noreturn]] void refuse_quote(const Pasted& quote, int line, int column) const {
    throw UsageError(at(line, column) + ": " + quote.name +
                         ", which word processors and chats put for \" and ': YAML quotes with \" and ', and reads this one as "
                         "part of the value",
                     "write the value in \"...\" or '...', or without quotes (a plain value needs none)");
  }
  [[noreturn]] void refuse_colon(const std::string& key, int line, int column) const {
    throw UsageError(at(line, column) + ": a full-width colon (\xEF\xBC\x9A, U+FF1A) after '" + key +
                         "', as Chinese and Japanese input writes it: a YAML key ends at ':'",
                     "write '" + key + ": ' with the plain colon and a space");
  }

  const std::string& origin_;
  bool one_value_;
  char quote_ = 0;         // the quote of a string open across lines, or 0
  int block_indent_ = -1;  // the indentation of the key whose block scalar (| or >) follows, or -1
};

}  // namespace

void refuse_pasted_characters(const std::string& text, const std::string& origin, bool one_value) {
  Scanner scanner(origin, one_value);
  std::size_t start = 0;
  for (int number = 1; start <= text.size(); ++number) {
    const auto newline = text.find('\n', start);
    const auto stop = newline == std::string::npos ? text.size() : newline;
    scanner.line(std::string_view(text).substr(start, stop - start), number, number == 1);
    if (newline == std::string::npos) break;
    start = newline + 1;
  }
}

}  // namespace gputrain::train
