// Gang placement: all of a job's slots at once, packed onto the fewest hosts.
#ifndef COHORT_SCHED_GANG_PLACEMENT_H_
#define COHORT_SCHED_GANG_PLACEMENT_H_

#include <optional>
#include <vector>

#include "sched/job.h"

namespace cohort::sched {

// Places `slots` slots on hosts whose free slot counts are `free` (indexed by
// host). Uses the fewest hosts possible; among placements with that many
// hosts it fills the largest holes and finishes on the host whose free count
// fits the remainder most tightly, so big holes stay whole for big gangs.
// nullopt when the free slots together are fewer than `slots`.
std::optional<std::vector<Placement>> PlaceGang(const std::vector<int>& free, int slots);

// free[p.host] -= p.slots for every p (or += when `sign` is +1). Every
// p.host must index `free` (PlaceGang's placements on it do).
void ApplyPlacement(const std::vector<Placement>& placement, int sign, std::vector<int>* free);

// Gives `placement`'s slots back to `free` (free[p.host] += p.slots; every
// p.host must index it) and returns how many became free to place on: fewer
// than it held where a host was oversubscribed (a negative count, which
// PlaceGang never places on) and pays off its debt first.
int ReleasePlacement(const std::vector<Placement>& placement, std::vector<int>* free);

}  // namespace cohort::sched

#endif  // COHORT_SCHED_GANG_PLACEMENT_H_
