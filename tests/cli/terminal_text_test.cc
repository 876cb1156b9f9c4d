// TerminalText and TerminalJson: what another user chose (a job's command)
// never reaches the terminal as a control sequence.
#include "cli/terminal_text.h"

#include <gtest/gtest.h>

namespace cohort::cli {
namespace {

TEST(TerminalText, EscapesControlCharactersAndKeepsUtf8) {
  EXPECT_EQ(TerminalText("plain text, ok"), "plain text, ok");
  EXPECT_EQ(TerminalText("\x1b]0;title\x07\x1b[2J"), "\\x1b]0;title\\x07\\x1b[2J");
  EXPECT_EQ(TerminalText("a\rb\nc\td\x7f"), "a\\rb\\nc\\td\\x7f");
  EXPECT_EQ(TerminalText(std::string("nul\0!", 5)), "nul\\x00!");
  EXPECT_EQ(TerminalText("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"),
            "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80");  // é, €, an emoji
  EXPECT_EQ(TerminalText("csi\xc2\x9b"
                         "31m"),
            "csi\\u009b31m");  // C1 CSI in UTF-8
  // Not UTF-8: a lone 8-bit CSI, a stray continuation byte, a truncated
  // sequence, an overlong '/', a surrogate.
  EXPECT_EQ(TerminalText("\x9b"
                         "31m"),
            "\\x9b31m");
  EXPECT_EQ(TerminalText("\x80x\xe2\x82"), "\\x80x\\xe2\\x82");
  EXPECT_EQ(TerminalText("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(TerminalText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
}

TEST(TerminalText, CutsBetweenPiecesNeverInsideOne) {
  EXPECT_EQ(TerminalText("0123456789", 10), "0123456789");
  EXPECT_EQ(TerminalText("0123456789a", 10), "0123456...");
  // The escape that would cross the cut goes whole.
  EXPECT_EQ(TerminalText("012345\x1b"
                         "abcdef",
                         10),
            "012345...");
  EXPECT_EQ(TerminalText("01234\xe2\x82\xac"
                         "abcdef",
                         10),
            "01234...");
  EXPECT_EQ(TerminalText("0123\xe2\x82\xac"
                         "ab",
                         10),
            "0123\xe2\x82\xac"
            "ab");
}

TEST(TerminalJson, EscapesDelAndC1InStrings) {
  EXPECT_EQ(TerminalJson("[\"a\\u001b\xc2\x9b\x7f\xc2\xa9\"]"),
            "[\"a\\u001b\\u009b\\u007f\xc2\xa9\"]");  // © stays
}

}  // namespace
}  // namespace cohort::cli
