// Lists of names in messages and help.
#include "common/word_list.h"

namespace cohort {

std::string JoinWithOr(const std::vector<std::string>& words) {
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text += i + 1 == words.size() ? " or " : ", ";
    text += words[i];
  }
  return text;
}

}  // namespace cohort
