// Gang placement onto the fewest hosts (see gang_placement.h).
#include "sched/gang_placement.h"

#include <algorithm>
#include <numeric>

namespace cohort::sched {

namespace {

// The host with the smallest free count >= need among `candidates`, or -1.
int TightestFit(const std::vector<int>& free, const std::vector<int>& candidates, int need) {
  int best = -1;
  for (int h : candidates) {
    if (free[h] >= need && (best < 0 || free[h] < free[best])) best = h;
  }
  return best;
}

}  // namespace

std::optional<std::vector<Placement>> PlaceGang(const std::vector<int>& free, int slots) {
  if (slots <= 0) return std::vector<Placement>{};
  std::vector<int> hosts;
  long total = 0;
  for (int h = 0; h < static_cast<int>(free.size()); ++h) {
    if (free[h] > 0) {
      hosts.push_back(h);
      total += free[h];
    }
  }
  if (total < slots) return std::nullopt;
  // Largest holes first; ties by host index so the result is deterministic.
  std::sort(hosts.begin(), hosts.end(),
            [&](int a, int b) { return free[a] != free[b] ? free[a] > free[b] : a < b; });
  std::vector<Placement> placement;
  int remaining = slots;
  size_t next = 0;
  // Fill whole hosts while the remainder is larger than any single hole left.
  while (remaining > free[hosts[next]]) {
    placement.push_back({hosts[next], free[hosts[next]]});
    remaining -= free[hosts[next]];
    ++next;
  }
  std::vector<int> rest(hosts.begin() + next, hosts.end());
  int last = TightestFit(free, rest, remaining);
  placement.push_back({last, remaining});
  return placement;
}

void ApplyPlacement(const std::vector<Placement>& placement, int sign, std::vector<int>* free) {
  for (const Placement& p : placement) (*free)[p.host] += sign * p.slots;
}

int ReleasePlacement(const std::vector<Placement>& placement, std::vector<int>* free) {
  int usable = 0;
  for (const Placement& p : placement) {
    int& count = (*free)[p.host];
    usable += std::max(0, count + p.slots) - std::max(0, count);
    count += p.slots;
  }
  return usable;
}

}  // namespace cohort::sched
