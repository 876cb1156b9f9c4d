// Lists of names in messages and help: "cohort, fifo or strict-priority".
#ifndef COHORT_COMMON_WORD_LIST_H_
#define COHORT_COMMON_WORD_LIST_H_

#include <string>
#include <vector>

namespace cohort {

// "a", "a or b", "a, b or c"; "" for none.
std::string JoinWithOr(const std::vector<std::string>& words);

}  // namespace cohort

#endif  // COHORT_COMMON_WORD_LIST_H_
