// The worker side of elastic jobs (`cohort run --min-np/--max-np`, Horovod's
// elastic mode). The launcher's driver (launch/elastic_driver.h) decides each
// "round" of the job: which workers are in it and in what rank order. A worker
// process keeps its identity (COHORT_ELASTIC_WORKER, given by the launcher)
// across rounds while its rank changes; each init() joins the newest round that
// names it and builds a fresh mesh under the store prefix "round<N>/".
//
// Keys in the launcher's store (unprefixed):
//   elastic/round                      newest round published (a counter)
//   elastic/round<N>/members           "worker host\n" per rank, in rank order
//   elastic/round<N>/joined/<worker>   a counter each join of N adds to; a
//                                      second join means the worker left N
//                                      (a failure or a host update) and asks
//                                      for the next round
//   elastic/round<N>/go                "go" once every member joined, or
//                                      "superseded" when round N+1 replaced it
// No member is special: the store lives in the launcher, so any rank may die.
#ifndef COHORT_RENDEZVOUS_ELASTIC_ROUND_H_
#define COHORT_RENDEZVOUS_ELASTIC_ROUND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "common/deadline.h"
#include "rendezvous/store_client.h"

namespace cohort {

inline constexpr char kElasticRoundKey[] = "elastic/round";
// A worker's first join includes its interpreter's start-up and imports, which
// on a loaded host take far longer than a join: the driver waits at least this
// long for it, however short --elastic-timeout is.
inline constexpr double kElasticStartupSeconds = 60;

// One member of a round: a worker and the host it runs on.
struct ElasticMember {
  std::string worker;
  std::string host;
};

// A worker's place in the round it joined.
struct ElasticPlacement {
  int64_t round = 0;
  int rank = 0, size = 0;
  int local_rank = 0, local_size = 0;
  int cross_rank = 0, cross_size = 0;
};

// "elastic/round<N>/" + what.
std::string ElasticRoundKey(int64_t round, const std::string& what);

// The members text ("worker host" lines) and back. Errors name the line.
std::string FormatElasticMembers(const std::vector<ElasticMember>& members);
Result<std::vector<ElasticMember>> ParseElasticMembers(const std::string& text);

// `worker`'s place among `members` (hosts numbered in order of first
// appearance); an error when it is not a member.
Result<ElasticPlacement> PlaceElasticWorker(const std::vector<ElasticMember>& members,
                                            const std::string& worker, int64_t round);

// Joins the newest round that names `worker` and waits until the driver says
// go. A worker that already joined the newest round leaves it (this is how
// reset() asks for the next round) and waits for the next. The driver settles
// every round within its --elastic-timeout, so a wait of `round_seconds` (that
// timeout and a margin) for one round means the launcher is gone: kTimeout,
// naming the round.
Result<ElasticPlacement> JoinElasticRound(StoreClient& store, const std::string& worker,
                                          double round_seconds);

// The newest round the driver has published (0 before the first).
Result<int64_t> NewestElasticRound(StoreClient& store);

}  // namespace cohort

#endif  // COHORT_RENDEZVOUS_ELASTIC_ROUND_H_
