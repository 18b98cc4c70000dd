#include <gtest/gtest.h>

#include <string>

#include "gputrain/core/printable.hpp"

using namespace gputrain::core;

TEST(Printable, TextATerminalWouldNotActOnIsUnchanged) {
  EXPECT_EQ(printable(""), "");
  EXPECT_EQ(printable("caf\xC3\xA9 \xF0\x9F\x90\xB1, back\\slash"), "caf\xC3\xA9 \xF0\x9F\x90\xB1, back\\slash");  // é, an emoji
  EXPECT_EQ(printable("error: two lines\n  fix:\tone"), "error: two lines\n  fix:\tone");                          // a message's own layout
  EXPECT_EQ(printable("\xC3\xA9\xC2\xA0"), "\xC3\xA9\xC2\xA0");  // U+00A0 follows the C1 block: printed
  EXPECT_EQ(printable("caf\xE9"), "caf\xE9");                    // not UTF-8: no terminal acts on it
}

// A class name or cell from a CSV that would set the window title, colour the console, ring the
// bell or overwrite the line it is in.
TEST(Printable, ControlCharactersAreWrittenAsEscapes) {
  EXPECT_EQ(printable("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
  EXPECT_EQ(printable("\x1b[31mRED\x1b[0m"), "\\x1b[31mRED\\x1b[0m");
  EXPECT_EQ(printable("cr\rmid"), "cr\\rmid");
  EXPECT_EQ(printable(std::string("nul\0end", 7)), "nul\\x00end");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
  EXPECT_EQ(printable("csi\xC2\x9B"
                      "2J, nel\xC2\x85"),
            "csi\\u009b2J, nel\\u0085");         // C1 controls in UTF-8
  EXPECT_EQ(printable("cut \xC2"), "cut \xC2");  // a lead byte alone
}

// A name holding a zero-width space reads as another name without it, and a right-to-left
// override shows the text after it backwards ('txt\u202eexe.pdf' as 'txtfdp.exe'): both escaped.
TEST(Printable, InvisibleAndReorderingCharactersAreWrittenAsEscapes) {
  EXPECT_EQ(printable("mlp\xE2\x80\x8B"), "mlp\\u200b");
  EXPECT_EQ(printable("a\xE2\x80\xAE"
                      "fdp.exe"),
            "a\\u202efdp.exe");
  EXPECT_EQ(printable("\xE2\x81\xA6x\xE2\x81\xA9"), "\\u2066x\\u2069");
  EXPECT_EQ(printable("bom\xEF\xBB\xBF"), "bom\\ufeff");
  EXPECT_EQ(printable("dash\xE2\x80\x93 ok \xE2\x80\x9Cq\xE2\x80\x9D"), "dash\xE2\x80\x93 ok \xE2\x80\x9Cq\xE2\x80\x9D");  // visible: kept
  EXPECT_EQ(printable("cut \xE2\x80"), "cut \xE2\x80");
}

TEST(Printable, QuotedNamesKeepToTheirLine) {
  EXPECT_EQ(quoted("cat"), "'cat'");
  EXPECT_EQ(quoted("two\nlines"), "'two\\nlines'");
  EXPECT_EQ(quoted("tab\there"), "'tab\\there'");
  EXPECT_EQ(quoted("\x1b[2J"), "'\\x1b[2J'");
  EXPECT_EQ(quoted(""), "''");
}

// A free-text cell quoted in an error: its start, cut between two characters.
TEST(Printable, QuotedNamesPastTheirLimitAreCutBetweenCharacters) {
  EXPECT_EQ(quoted("abcdef", 3), "'abc...'");
  EXPECT_EQ(quoted("abc", 3), "'abc'");
  EXPECT_EQ(quoted("a\xC3\xA9z", 2), "'a...'");  // the limit falls inside é
  EXPECT_EQ(quoted("a\nb\nc", 3), "'a\\nb...'");
}
