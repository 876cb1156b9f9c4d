// The deadlock verdict every rank computes from the same reports.
#include "engine/deadlock.h"

#include <algorithm>

namespace cohort {

std::vector<int> DeadlockedRanks(const std::vector<std::vector<StuckWait>>& stuck) {
  const int n = static_cast<int>(stuck.size());
  std::vector<bool> in(n);
  for (int r = 0; r < n; ++r) in[r] = !stuck[r].empty();
  // Drops, until nothing changes, every rank that waits for a rank outside.
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < n; ++r) {
      if (!in[r]) continue;
      for (const StuckWait& w : stuck[r]) {
        const bool outside =
            w.missing.empty() || std::any_of(w.missing.begin(), w.missing.end(),
                                             [&](int32_t m) { return m < 0 || m >= n || !in[m]; });
        if (outside) {
          in[r] = false;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) {
    if (in[r]) ranks.push_back(r);
  }
  return ranks;
}

std::string DescribeDeadlock(const std::vector<std::vector<StuckWait>>& stuck,
                             const std::vector<int>& ranks,
                             const std::function<std::string(int)>& describe) {
  std::string out;
  for (int r : ranks) {
    for (const StuckWait& w : stuck[r]) {
      std::string missing;
      for (int32_t m : w.missing) missing += (missing.empty() ? "" : ", ") + std::to_string(m);
      out += (out.empty() ? "" : "; ") + describe(r) + " waits for " + RequestKindName(w.kind) +
             " '" + w.name + "'" + (w.set == 0 ? "" : " of process set " + std::to_string(w.set)) +
             ", which rank" + (w.missing.size() > 1 ? "s " : " ") + missing +
             (w.missing.size() > 1 ? " have" : " has") + " not submitted";
    }
  }
  return out;
}

}  // namespace cohort
