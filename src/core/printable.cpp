#include "gputrain/core/printable.hpp"

#include <cstdio>

namespace gputrain::core {
namespace {

// Appends the character at `text[i]` to `out`, escaped when a terminal would act on it, and
// returns the bytes it covered (two for a C1 control in UTF-8).
std::size_t append_character(std::string& out, std::string_view text, std::size_t i, bool keep_layout) {
  const auto byte = static_cast<unsigned char>(text[i]);
  const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
  char escape[8];
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
