// Splitting a recorded command line into words, and quoting words back.
#include "launch/shell_words.h"

#include <cstring>

#include "launch/ssh_launcher.h"  // ShellQuote

namespace cohort {
namespace {

// What a shell would act on, outside quotes: operators, expansions, globs.
constexpr char kActive[] = ";&|<>()$`*?[{~!";

// Whether `c` is one of `set` (strchr alone also finds the terminating NUL).
bool OneOf(char c, const char* set) { return c != '\0' && std::strchr(set, c) != nullptr; }

Status Refused(const std::string& what, size_t position) {
  return Status::InvalidArgument(what + " at position " + std::to_string(position));
}

// 'c' quoted for a message ("newline" for line breaks). Appended, not
// "'" + string: that form trips GCC 12's -Wrestrict false positive.
std::string Shown(char c) {
  if (c == '\n' || c == '\r') return "newline";
  std::string text = "'";
  text += c;
  return text += '\'';
}

}  // namespace

Result<std::vector<std::string>> SplitShellWords(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has started (an empty quoted one counts)
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\0') {
      return Refused("a NUL character", i);
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\\') {
      if (++i == line.size()) return Status::InvalidArgument("a backslash at the end");
      if (line[i] == '\n') continue;  // a continued line: no character, no word break
      word += line[i];
      in_word = true;
    } else if (c == '\'') {
      const size_t end = line.find('\'', i + 1);
      if (end == std::string::npos) return Refused("unterminated ' quote", i);
      word.append(line, i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      const size_t start = i;
      for (++i;; ++i) {
        if (i == line.size()) return Refused("unterminated \" quote", start);
        if (line[i] == '"') break;
        if (line[i] == '$' || line[i] == '`') {
          return Refused(Shown(line[i]) + " in double quotes", i);
        }
        if (line[i] == '\\' && i + 1 < line.size() && OneOf(line[i + 1], "$`\"\\\n")) {
          if (line[++i] != '\n') word += line[i];
          continue;
        }
        word += line[i];
      }
      in_word = true;
    } else if (OneOf(c, kActive) || c == '\n' || c == '\r' || (c == '#' && !in_word)) {
      return Refused("unquoted " + Shown(c), i);
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return Status::InvalidArgument("no words");
  return words;
}

std::string QuoteShellWord(const std::string& word) {
  bool safe = !word.empty();
  for (char c : word) {
    safe &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            OneOf(c, "@%+=:,./_-");
  }
  return safe ? word : ShellQuote(word);
}

std::string JoinShellWords(const std::vector<std::string>& words) {
  std::string line;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) line += ' ';
    const bool assignment = i == 0 && words[i].find('=') != std::string::npos;
    line += assignment ? ShellQuote(words[i]) : QuoteShellWord(words[i]);
  }
  return line;
}

}  // namespace cohort
