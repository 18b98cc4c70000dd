#include <gtest/gtest.h>

#include <string>

#include "gputrain/core/text_encoding.hpp"

using namespace gputrain::core;

TEST(TextEncoding, WellFormedUtf8IsAccepted) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("plain ASCII, longer than eight bytes"));
  EXPECT_TRUE(is_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é, €, an emoji
  EXPECT_TRUE(is_utf8("\xF4\x8F\xBF\xBF"));                           // U+10FFFF, the last code point
}

// RFC 3629: the forms UTF-8 decoders must refuse, each at the byte where it starts.
TEST(TextEncoding, MalformedSequencesAreFoundWhereTheyStart) {
  const std::pair<std::string, std::size_t> cases[] = {
      {"caf\xE9", 3},               // Latin-1 é
      {"0123456789\xC0\x80", 10},   // overlong NUL
      {"\xE0\x80\xAF", 0},          // overlong '/'
      {"ab\xED\xA0\x80", 2},        // a surrogate
      {"\xF4\x90\x80\x80", 0},      // past U+10FFFF
      {"\xC3", 0},                  // cut short
      {"ok \xE2\x82", 3},           // cut short after ASCII
      {"\x80", 0},                  // a lone continuation byte
      {"\xF8\x88\x80\x80\x80", 0},  // five bytes
  };
  for (const auto& [text, at] : cases) {
    const auto found = first_invalid_utf8(text);
    ASSERT_TRUE(found.has_value()) << text;
    EXPECT_EQ(*found, at) << text;
  }
}

TEST(TextEncoding, Windows1252IsDecodedAsPythonDecodesIt) {
  EXPECT_EQ(windows1252_to_utf8("caf\xE9"), "caf\xC3\xA9");                                                      // é (Latin-1's too)
  EXPECT_EQ(windows1252_to_utf8("\x80 \x93x\x94 \x99"), "\xE2\x82\xAC \xE2\x80\x9Cx\xE2\x80\x9D \xE2\x84\xA2");  // € “x” ™
  EXPECT_EQ(windows1252_to_utf8("\x81\x9D"), "\xC2\x81\xC2\x9D");  // unassigned: the C1 control of that number
  EXPECT_EQ(windows1252_to_utf8("\xFF"), "\xC3\xBF");
  EXPECT_EQ(as_utf8("caf\xC3\xA9"), "caf\xC3\xA9");  // UTF-8 stays as it is
  EXPECT_EQ(as_utf8("caf\xE9"), "caf\xC3\xA9");
  for (int byte = 0; byte < 256; ++byte) EXPECT_TRUE(is_utf8(windows1252_to_utf8(std::string(1, static_cast<char>(byte))))) << byte;
}

TEST(TextEncoding, SurrogateEscapesAreWhatPythonsPickleReadsAndComeBackByteForByte) {
  // Python: b"caf\xe9\x80".decode("utf-8", "surrogateescape").encode("utf-8", "surrogatepass")
  EXPECT_EQ(surrogate_escaped("caf\xE9\x80"), "caf\xED\xB3\xA9\xED\xB2\x80");
  EXPECT_EQ(surrogate_escaped("caf\xC3\xA9"), "caf\xC3\xA9");            // UTF-8 stays as it is
  EXPECT_EQ(surrogate_escaped("\xE2\x82"), "\xED\xB3\xA2\xED\xB2\x82");  // a cut sequence: each byte
  std::string every_byte;
  for (int b = 1; b < 256; ++b) every_byte += static_cast<char>(b);
  const auto escaped = surrogate_escaped(every_byte + "\xC3\xA9\xED\xA0\x80");  // also a surrogate's own bytes
  EXPECT_EQ(surrogate_unescaped(escaped), every_byte + "\xC3\xA9\xED\xA0\x80");
  EXPECT_EQ(surrogate_unescaped("caf\xC3\xA9 \xED\x9F\xBF"), "caf\xC3\xA9 \xED\x9F\xBF");  // U+D7FF is no escape
}

// A name macOS wrote decomposed (an 'e' and U+0301) and the one Linux and Windows write (U+00E9)
// come out as one; Korean syllables too. ASCII and text that is not UTF-8 stay as they are.
TEST(TextEncoding, DecomposedNamesAreComposedAsOthersWriteThem) {
  std::string cafe = "cafe\xcc\x81";
  to_nfc(cafe);
  EXPECT_EQ(cafe, "caf\xc3\xa9");
  std::string hangul = "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab";  // U+1112 U+1161 U+11AB, decomposed
  to_nfc(hangul);
  EXPECT_EQ(hangul, "\xed\x95\x9c");  // U+D55C
  std::string plain = "cat", latin1 = "caf\xe9";
  to_nfc(plain);
  to_nfc(latin1);
  EXPECT_EQ(plain, "cat");
  EXPECT_EQ(latin1, "caf\xe9");
}
