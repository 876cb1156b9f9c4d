// Transfers: the progress engine under every link-based algorithm. An
// algorithm posts sends and receives per peer; operations on the same peer
// and direction complete in posting order. Progress() moves whatever bytes
// can move on all links at once (so a rank sends to one neighbour while
// receiving from another without threads) and, when nothing can move, waits
// on the sockets or spins on shared memory, checking the deadline and the
// liveness of the peers it waits for.
#ifndef COHORT_COLLECTIVES_TRANSFERS_H_
#define COHORT_COLLECTIVES_TRANSFERS_H_

#include <deque>
#include <string>
#include <vector>

#include "collectives/call_header.h"
#include "collectives/communicator.h"
#include "net/shm_backoff.h"

namespace cohort {

class Transfers {
 public:
  // `during` names the collective in error messages ("allreduce").
  Transfers(Communicator& comm, std::string during);

  void PostSend(int peer, const void* data, size_t len);
  void PostRecv(int peer, void* data, size_t len);
  // Sends `mine` to rank `to` and checks that the header received from rank
  // `from` matches `expected` (usually the same as `mine`); a difference fails
  // Progress() with kMismatch before any data from `from` is received.
  void PostHeaderCheck(int to, int from, const CallHeader& mine, const CallHeader& expected);

  // Moves bytes; when nothing moved, waits a little. An error here has
  // already been recorded with Communicator::Fail.
  Status Progress();
  // Progress() until every posted operation is complete.
  Status WaitAll();

  // Completed operations so far, per peer and direction.
  size_t sends_done(int peer) const { return peers_[peer].sends_done; }
  size_t recvs_done(int peer) const { return peers_[peer].recvs_done; }
  // Operations posted so far (complete or not), per peer and direction.
  size_t recvs_posted(int peer) const { return peers_[peer].recvs_done + peers_[peer].recvs.size(); }

 private:
  struct Op {
    unsigned char* data;
    size_t len;
    size_t moved;
    int header_index;  // >= 0: a received header to verify on completion
  };
  struct PeerQueues {
    std::deque<Op> sends;
    std::deque<Op> recvs;
    size_t sends_done = 0;
    size_t recvs_done = 0;
  };
  struct PendingHeader {
    CallHeader sent;
    CallHeader expected;
    CallHeader received;
  };

  Status MoveBytes(int peer, bool* moved);
  Status Wait();
  Status Fail(const Status& status) { return comm_.Fail(status); }
  int FirstPendingPeer() const;
  bool AnyShmLinkCanMove() const;

  Communicator& comm_;
  const std::string during_;
  std::vector<PeerQueues> peers_;
  std::deque<PendingHeader> headers_;  // deque: stable addresses while ops point into it
  std::vector<int> active_;            // peers with posted operations
  Deadline deadline_;
  Clock::time_point next_check_;
  unsigned idle_spins_ = 0;
  ShmBackoff backoff_;
};

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_TRANSFERS_H_
