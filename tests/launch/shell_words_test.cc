// Shell words (launch/shell_words.h): a recorded command line read back as
// an argv the way a POSIX shell would, refusing anything a shell would do
// more with than split it; and words quoted so a shell reads them back.
#include "launch/shell_words.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cohort {
namespace {

using Words = std::vector<std::string>;

TEST(ShellWords, QuotesAndEscapesAreWordsLikeTheShellReadsThem) {
  EXPECT_EQ(*SplitShellWords("python3 train.py --lr 0.1"),
            (Words{"python3", "train.py", "--lr", "0.1"}));
  // What Python's shlex.join writes (cohort.track records it so).
  EXPECT_EQ(*SplitShellWords("/usr/bin/python3 job.py 'it'\"'\"'s' 'a b' '' 'x;y'"),
            (Words{"/usr/bin/python3", "job.py", "it's", "a b", "", "x;y"}));
  EXPECT_EQ(*SplitShellWords("  a\\ b \"c \\\"d\\\" \\$e\"\tf\\;g  "),
            (Words{"a b", "c \"d\" $e", "f;g"}));
  EXPECT_EQ(*SplitShellWords("a\\\nb"), (Words{"ab"}));  // a continued line
  EXPECT_EQ(*SplitShellWords("--lr=0.1 a#b"), (Words{"--lr=0.1", "a#b"}));
}

TEST(ShellWords, WhatTheShellWouldRunIsRefusedNamingIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"python3 x.py; touch PWNED", "unquoted ';' at position 12"},
      {"a && b", "unquoted '&' at position 2"},
      {"a | b", "unquoted '|' at position 2"},
      {"a > out", "unquoted '>' at position 2"},
      {"echo $(id)", "unquoted '$' at position 5"},
      {"echo `id`", "unquoted '`' at position 5"},
      {"echo \"$(id)\"", "'$' in double quotes at position 6"},
      {"echo \"`id`\"", "'`' in double quotes at position 6"},
      {"ls *.py", "unquoted '*' at position 3"},
      {"ls ~/x", "unquoted '~' at position 3"},
      {"a #comment", "unquoted '#' at position 2"},
      {"a\nb", "unquoted newline at position 1"},
      {"echo 'open", "unterminated ' quote at position 5"},
      {"echo \"open", "unterminated \" quote at position 5"},
      {"echo \\", "a backslash at the end"},
      {"   ", "no words"},
  };
  for (const auto& [line, why] : cases) {
    Result<Words> words = SplitShellWords(line);
    ASSERT_FALSE(words.ok()) << line;
    EXPECT_EQ(words.status().message(), why) << line;
  }
}

TEST(ShellWords, QuotedWordsReadBackAsThemselves) {
  EXPECT_EQ(QuoteShellWord("train.py"), "train.py");
  EXPECT_EQ(QuoteShellWord("--lr=0.1"), "--lr=0.1");
  EXPECT_EQ(QuoteShellWord("/a/b-c_d@e%f+g:h,i"), "/a/b-c_d@e%f+g:h,i");
  EXPECT_EQ(QuoteShellWord(""), "''");
  EXPECT_EQ(QuoteShellWord("it's"), "'it'\\''s'");
  EXPECT_EQ(QuoteShellWord("abc; touch PWNED"), "'abc; touch PWNED'");
  const Words words = {"A=1", "x", "a b", "$(id)", "it's", "~", "", "*", "#", "\n"};
  EXPECT_EQ(JoinShellWords(words), "'A=1' x 'a b' '$(id)' 'it'\\''s' '~' '' '*' '#' '\n'");
  EXPECT_EQ(*SplitShellWords(JoinShellWords(words)), words);
}

}  // namespace
}  // namespace cohort
