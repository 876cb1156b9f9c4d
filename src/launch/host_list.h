// The hosts of a multi-host `cohort run` (-H host1:2,host2:2 or --hostfile)
// and which rank runs where. Ranks fill each host's slots in the order the
// hosts are given, so the ranks of one host are consecutive: local ranks,
// cross ranks and the shared-memory groups follow from the placement.
#ifndef COHORT_LAUNCH_HOST_LIST_H_
#define COHORT_LAUNCH_HOST_LIST_H_

#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort {

struct HostSlots {
  std::string host;  // a name or address ssh can reach ("localhost": no ssh)
  int slots = 1;
};

// "host1:2,host2,host3:4" (a host without ":N" has 1 slot). A host named
// twice gets the sum of its slots, at its first position.
Result<std::vector<HostSlots>> ParseHostList(const std::string& list);

// Lines "host [slots=N]"; '#' starts a comment; blank lines are skipped.
// Errors name the file and line.
Result<std::vector<HostSlots>> ParseHostfile(const std::string& path);
// The same, from text already read (`label` names it in errors).
Result<std::vector<HostSlots>> ParseHostfileText(const std::string& text, const std::string& label);

struct RankPlacement {
  std::string host;
  int local_rank = 0;
  int local_size = 0;
  int cross_rank = 0;  // index of the host among the hosts that got ranks
};

struct JobPlacement {
  std::vector<RankPlacement> ranks;  // index = rank
  int cross_size = 0;                // hosts that got at least one rank
};

// Fills slots in order with ranks 0..np-1. An error when np exceeds the slots.
Result<JobPlacement> PlaceRanks(const std::vector<HostSlots>& hosts, int np);

// True for the names that mean this machine, where ranks run without ssh:
// localhost, 127.x, and any name that resolves to a loopback address or to an
// address of one of this host's interfaces (a name lookup).
bool IsLocalHost(const std::string& host);

}  // namespace cohort

#endif  // COHORT_LAUNCH_HOST_LIST_H_
