#include "gputrain/core/text_encoding.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace gputrain::core {
namespace {

// Bytes 0x80-0x9F of Windows-1252: the characters it puts where Latin-1 has C1 controls (a 0 is
// unassigned: kept as the control). The rest of the bytes are Latin-1, U+0000-U+00FF.
constexpr char16_t kHigh[32] = {0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
                                0x2039, 0x0152, 0,      0x017D, 0,      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
                                0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};

void append_utf8(std::string& out, char32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// The length of the well-formed sequence at `s` (of `left` bytes), or 0 (Unicode 15, table 3-7).
std::size_t sequence_length(const unsigned char* s, std::size_t left) {
  const unsigned char b = s[0];
  const auto tail = [&](std::size_t n, unsigned char low, unsigned char high) -> std::size_t {
    if (left < n || s[1] < low || s[1] > high) return 0;
    for (std::size_t k = 2; k < n; ++k)
      if ((s[k] & 0xC0) != 0x80) return 0;
    return n;
  };
  if (b >= 0xC2 && b <= 0xDF) return tail(2, 0x80, 0xBF);
  if (b == 0xE0) return tail(3, 0xA0, 0xBF);
  if (b == 0xED) return tail(3, 0x80, 0x9F);  // no surrogates
  if (b >= 0xE1 && b <= 0xEF) return tail(3, 0x80, 0xBF);
  if (b == 0xF0) return tail(4, 0x90, 0xBF);
  if (b >= 0xF1 && b <= 0xF3) return tail(4, 0x80, 0xBF);
  if (b == 0xF4) return tail(4, 0x80, 0x8F);
  return 0;
}

}  // namespace

std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t size = text.size();
  std::size_t at = 0;
  while (at < size) {
    // Text is mostly ASCII: eight bytes at a time while none has its high bit set.
    if (size - at >= 8) {
      std::uint64_t word;
      std::memcpy(&word, s + at, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        at += 8;
        continue;
      }
    }
    if (s[at] < 0x80) {
      ++at;
      continue;
    }
    const auto length = sequence_length(s + at, size - at);
    if (length == 0) return at;
    at += length;
  }
  return std::nullopt;
}

std::string windows1252_to_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80 && byte < 0xA0 && kHigh[byte - 0x80] != 0)
      append_utf8(out, kHigh[byte - 0x80]);
    else
      append_utf8(out, byte);
  }
  return out;
}

std::string as_utf8(std::string_view text) { return is_utf8(text) ? std::string(text) : windows1252_to_utf8(text); }

std::string surrogate_escaped(std::string_view text) {
  if (is_utf8(text)) return std::string(text);
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = s[at] < 0x80 ? 1 : sequence_length(s + at, text.size() - at);
    if (length > 0) {
      out.append(text.substr(at, length));
      at += length;
      continue;
    }
    const char32_t surrogate = 0xDC00 + s[at++];  // U+DC80-U+DCFF: ED B2 80 - ED B3 BF
    out += static_cast<char>(0xE0 | (surrogate >> 12));
    out += static_cast<char>(0x80 | ((surrogate >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (surrogate & 0x3F));
  }
  return out;
}

std::string surrogate_unescaped(std::string_view text) {
  if (text.find('\xED') == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size(); ++at) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data()) + at;
    if (text.size() - at >= 3 && s[0] == 0xED && (s[1] == 0xB2 || s[1] == 0xB3) && (s[2] & 0xC0) == 0x80) {
      const unsigned surrogate = 0xD000U | (s[1] & 0x3FU) << 6 | (s[2] & 0x3FU);
      out += static_cast<char>(surrogate - 0xDC00U);
      at += 2;
      continue;
    }
    out += text[at];
  }
  return out;
}

void to_nfc(std::string& text) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }) || !is_utf8(text)) return;
  utf8proc_uint8_t* composed = nullptr;
  const auto size = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                                 &composed, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(composed, &std::free);
  if (size >= 0) text.assign(reinterpret_cast<const char*>(composed), static_cast<std::size_t>(size));
}

}  // namespace gputrain::core
