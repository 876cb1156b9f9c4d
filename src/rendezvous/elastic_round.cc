// Joining a round of an elastic job (see elastic_round.h).
#include "rendezvous/elastic_round.h"

#include <algorithm>
#include <sstream>

namespace cohort {

std::string ElasticRoundKey(int64_t round, const std::string& what) {
  return "elastic/round" + std::to_string(round) + "/" + what;
}

std::string FormatElasticMembers(const std::vector<ElasticMember>& members) {
  std::string text;
  for (const ElasticMember& m : members) text += m.worker + " " + m.host + "\n";
  return text;
}

Result<std::vector<ElasticMember>> ParseElasticMembers(const std::string& text) {
  std::vector<ElasticMember> members;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream words(line);
    ElasticMember m;
    std::string extra;
    if (!(words >> m.worker >> m.host) || (words >> extra)) {
      return Status::InvalidArgument("elastic round members, line " + std::to_string(number) +
                                     ": expected 'worker host', got '" + line + "'");
    }
    members.push_back(std::move(m));
  }
  return members;
}

Result<ElasticPlacement> PlaceElasticWorker(const std::vector<ElasticMember>& members,
                                            const std::string& worker, int64_t round) {
  std::vector<std::string> hosts;  // in order of first appearance
  for (const ElasticMember& m : members) {
    if (std::find(hosts.begin(), hosts.end(), m.host) == hosts.end()) hosts.push_back(m.host);
  }
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].worker != worker) continue;
    ElasticPlacement p;
    p.round = round;
    p.rank = static_cast<int>(i);
    p.size = static_cast<int>(members.size());
    for (size_t j = 0; j < members.size(); ++j) {
      if (members[j].host != members[i].host) continue;
      if (j < i) ++p.local_rank;
      ++p.local_size;
    }
    p.cross_rank =
        static_cast<int>(std::find(hosts.begin(), hosts.end(), members[i].host) - hosts.begin());
    p.cross_size = static_cast<int>(hosts.size());
    return p;
  }
  return Status::InvalidArgument("worker " + worker + " is not a member of elastic round " +
                                 std::to_string(round));
}

Result<int64_t> NewestElasticRound(StoreClient& store) { return store.Add(kElasticRoundKey, 0); }

Result<ElasticPlacement> JoinElasticRound(StoreClient& store, const std::string& worker,
                                          double round_seconds) {
  Result<int64_t> newest = NewestElasticRound(store);
  if (!newest.ok()) return newest.status().WithContext("reading the newest elastic round");
  const auto waited = [&](int64_t round, const Status& s) {
    return s.WithContext("elastic worker " + worker + " waiting for round " +
                         std::to_string(round) + " (is the launcher gone?)");
  };
  for (int64_t round = std::max<int64_t>(*newest, 1);; ++round) {
    const Deadline deadline = Deadline::AfterSeconds(round_seconds);
    Result<std::string> text = store.Get(ElasticRoundKey(round, "members"), deadline);
    if (!text.ok()) return waited(round, text.status());
    Result<std::vector<ElasticMember>> members = ParseElasticMembers(*text);
    if (!members.ok()) return members.status();
    Result<ElasticPlacement> placement = PlaceElasticWorker(*members, worker, round);
    if (!placement.ok()) continue;  // a round without this worker: wait for a later one
    // A second join of the same round is a request for the next one.
    Result<int64_t> joins = store.Add(ElasticRoundKey(round, "joined/" + worker), 1);
    if (!joins.ok()) return joins.status();
    if (*joins > 1) continue;
    Result<std::string> go = store.Get(ElasticRoundKey(round, "go"), deadline);
    if (!go.ok()) return waited(round, go.status());
    if (*go == "go") return placement;
  }
}

}  // namespace cohort
