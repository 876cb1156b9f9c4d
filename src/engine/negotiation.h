// NegotiationTable: the agreed record of which named tensors each rank has
// submitted. Every cycle each rank broadcasts its new announcements (an
// allgather); every rank applies all of them in rank order, so every rank
// computes the same ready list, the same errors and the same fused responses
// in the same order, with no coordinator round trip.
#ifndef COHORT_ENGINE_NEGOTIATION_H_
#define COHORT_ENGINE_NEGOTIATION_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "common/deadline.h"
#include "engine/request.h"

namespace cohort {

// One unit of work every rank executes in the same order.
struct Response {
  RequestKind kind = RequestKind::kAllreduce;
  std::vector<std::string> names;                    // more than one: a fused allreduce
  Status error;                                      // not OK: these names fail on every rank
  std::vector<int64_t> rows_per_rank;                // allgather: first dimension per rank
  std::vector<std::vector<int64_t>> splits_by_rank;  // alltoall: each rank's splits
  // Per name, the announcement of a rank that submitted it: what a joined
  // rank, which did not, needs to take part.
  std::vector<Announcement> what;
  int last_joined_rank = -1;  // join: the last rank to join
};

class NegotiationTable {
 public:
  // `names`: how messages name each rank (its job rank); empty: the identity.
  explicit NegotiationTable(int size, std::vector<int> names = {})
      : size_(size), names_(std::move(names)), joined_(size, false) {}

  // Applies one cycle's announcements, indexed by rank.
  void Apply(const std::vector<std::vector<Announcement>>& per_rank);

  // Takes every ready response in agreed order. Consecutive allreduces with
  // the same dtype, op and scale factors, each at most `max_fused_tensor_bytes`,
  // are fused while their total stays within `fusion_threshold_bytes` (0
  // disables fusion). Larger tensors run alone on their own buffers: on a
  // CPU, copying them through the fusion buffer costs more than the per-call
  // latency fusion saves.
  std::vector<Response> TakeResponses(uint64_t fusion_threshold_bytes,
                                      uint64_t max_fused_tensor_bytes);

  // Names submitted by some ranks but not all, with the ranks missing, in
  // the order they were first submitted.
  std::vector<std::pair<std::string, std::vector<int>>> Waiting() const;
  // Like Waiting(), only names this rank first saw at least `age` ago.
  std::vector<std::pair<std::string, std::vector<int>>> WaitingLongerThan(
      std::chrono::duration<double> age) const;
  // Forgets a waiting name (it was declared stalled).
  void Drop(const std::string& name) { entries_.erase(name); }
  bool empty() const { return entries_.empty() && ready_.empty(); }
  // Whether `name` was announced by some ranks and still waits for others.
  bool IsWaiting(const std::string& name) const { return entries_.count(name) > 0; }

 private:
  struct Entry {
    std::vector<Announcement> by_rank;  // valid where present[r]
    std::vector<bool> present;
    int arrived = 0;
    uint64_t order = 0;            // first submission, for Waiting()
    Clock::time_point first_seen;  // on this rank's clock, for the stall inspector
  };
  struct Ready {
    std::string name;
    std::vector<Announcement> by_rank;  // for joined ranks: a copy of a submitter's
    std::vector<int> joined;            // ranks that took part only because they joined
    int last_joined_rank = -1;          // the join response itself
  };
  bool IsComplete(const Entry& e) const;
  void ApplyJoin(int rank);

  void Complete(const std::string& name);
  // OK when every rank's announcement agrees with rank 0's.
  Status Validate(const Ready& ready) const;

  const int size_;
  const std::vector<int> names_;
  std::vector<bool> joined_;  // ranks that joined and wait for the others to join
  int last_joined_ = -1;
  uint64_t next_order_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<uint64_t, std::vector<Ready>> groups_;  // complete members of unfinished groups
  std::deque<Ready> ready_;
  Announcement last_fusable_;     // rank 0's announcement of the last response taken
  bool last_fusable_ok_ = false;  // whether later tensors may join that response
};

}  // namespace cohort

#endif  // COHORT_ENGINE_NEGOTIATION_H_
