#include "gputrain/core/printable.hpp"

#include <cstdio>

namespace gputrain::core {
namespace {

// The code point of a three-byte UTF-8 character that shows nothing or reorders what follows:
// zero-width spaces and joiners (U+200B-U+200F, U+2060-U+2064, U+FEFF) and bidirectional
// overrides and isolates (U+202A-U+202E, U+2066-U+2069), which can make text read as other text.
unsigned invisible_format_character(unsigned char byte, unsigned char next, unsigned char third) {
  if ((next & 0xC0) != 0x80 || (third & 0xC0) != 0x80) return 0;
  const unsigned code = ((byte & 0x0Fu) << 12) | ((next & 0x3Fu) << 6) | (third & 0x3Fu);
  const bool format = (code >= 0x200B && code <= 0x200F) || (code >= 0x202A && code <= 0x202E) || (code >= 0x2060 && code <= 0x2064) ||
                      (code >= 0x2066 && code <= 0x2069) || code == 0xFEFF;
  return byte >= 0xE0 && byte < 0xF0 && format ? code : 0;
}

// Appends the character at `text[i]` to `out`, escaped when a terminal would act on it or it
// would not show, and returns the bytes it covered (two for a C1 control in UTF-8).
std::size_t append_character(std::string& out, std::string_view text, std::size_t i, bool keep_layout) {
  const auto byte = static_cast<unsigned char>(text[i]);
  const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
  const auto third = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0;
  char escape[8];
  if (const auto code = invisible_format_character(byte, next, third); code != 0) {
    std::snprintf(escape, sizeof escape, "\\u%04x", code);
    out += escape;
    return 3;
  }
  if (byte == '\n' || byte == '\t') {
    out += keep_layout ? std::string(1, static_cast<char>(byte)) : byte == '\n' ? "\\n" : "\\t";
  } else if (byte == '\r') {
    out += "\\r";
  } else if (byte < 0x20 || byte == 0x7f) {
    std::snprintf(escape, sizeof escape, "\\x%02x", byte);
    out += escape;
  } else if (byte == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F; CSI is U+009B
    std::snprintf(escape, sizeof escape, "\\u%04x", next);
    out += escape;
    return 2;
  } else {
    out += static_cast<char>(byte);
  }
  return 1;
}

std::string escaped(std::string_view text, bool keep_layout) {
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size();) i += append_character(out, text, i, keep_layout);
  return out;
}

}  // namespace

std::string printable(std::string_view text) { return escaped(text, true); }

std::string quoted(std::string_view name, std::size_t most) {
  if (name.size() <= most) return "'" + escaped(name, false) + "'";
  while (most > 0 && (static_cast<unsigned char>(name[most]) & 0xC0) == 0x80) --most;  // inside a character
  return "'" + escaped(name.substr(0, most), false) + "...'";
}

}  // namespace gputrain::core
