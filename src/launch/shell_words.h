// Command lines as words: a recorded command line (as Python's shlex.join
// writes it) read back into an argv the way a POSIX shell splits it, without
// running anything a shell would; and words quoted so a shell reads them back.
#ifndef COHORT_LAUNCH_SHELL_WORDS_H_
#define COHORT_LAUNCH_SHELL_WORDS_H_

#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort {

// The words of `line`: separated by unquoted spaces and tabs; '...' and
// "..." quote (inside double quotes a backslash escapes $ ` " \ and
// newline), a backslash outside quotes escapes the next character,
// backslash-newline continues the line. Anything a shell would do more with
// than split is an error naming it and its 0-based position: unquoted
// ; & | < > ( ) $ ` * ? [ { ~ ! and newlines, '#' starting a word, $ and `
// in double quotes; so are unterminated quotes and a line of no words.
Result<std::vector<std::string>> SplitShellWords(const std::string& line);

// `word` as a shell reads it back: bare when it has only letters, digits
// and @ % + = : , . / _ - (Python's shlex.quote), else in single quotes.
std::string QuoteShellWord(const std::string& word);

// The words quoted and joined with spaces; a first word holding '=' is
// quoted too, or the shell would take it for a variable assignment.
std::string JoinShellWords(const std::vector<std::string>& words);

}  // namespace cohort

#endif  // COHORT_LAUNCH_SHELL_WORDS_H_
