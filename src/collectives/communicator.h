// Communicator: the group every collective algorithm runs over. It owns the
// mesh, knows the per-call deadline, and turns any failure into one sticky
// error that every later call returns, after telling the peers (through the
// rendezvous store and by closing its links) so they fail fast too.
//
// A sub-communicator (a process set) is a view of some of its parent's ranks:
// it numbers them 0..n-1 in the order given, sends over the parent's links,
// has no shared-memory segment of its own (so link-based algorithms run), and
// a failure in it fails the parent, since both share the links.
#ifndef COHORT_COLLECTIVES_COMMUNICATOR_H_
#define COHORT_COLLECTIVES_COMMUNICATOR_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "collectives/shared_buffers.h"
#include "common/deadline.h"
#include "net/mesh.h"
#include "rendezvous/store_client.h"

namespace cohort {

struct CommunicatorOptions {
  double timeout_seconds = 300;           // COHORT_TIMEOUT: bound on every wait
  size_t small_message_bytes = 64 << 10;  // below this, latency-optimal algorithms
  size_t chunk_bytes = 256 << 10;         // pipelining granularity over links
  // COHORT_SHM_SINGLE_COPY_BYTES: from this size on, collectives among the
  // ranks of one host copy straight between their memories where the mesh
  // allows it (Mesh::single_copy; collectives/cma_collectives.h).
  size_t single_copy_bytes = 1 << 20;
};

class Communicator {
 public:
  Communicator(Mesh mesh, std::unique_ptr<StoreClient> store, CommunicatorOptions options);
  // A sub-communicator over `members` (ranks of `parent`, this rank among
  // them, no repeats), which must outlive it.
  Communicator(Communicator& parent, const std::vector<int>& members);
  ~Communicator();

  int rank() const { return mesh_.rank; }
  int size() const { return mesh_.size; }
  Mesh& mesh() { return mesh_; }
  const CommunicatorOptions& options() const { return options_; }
  // Sets the algorithm cut-overs the engine's autotuner tunes. Every rank
  // must set the same values between the same two collectives (the engine
  // applies them at the same negotiation round everywhere).
  void Retune(size_t small_message_bytes, size_t single_copy_bytes) {
    options_.small_message_bytes = small_message_bytes;
    options_.single_copy_bytes = single_copy_bytes;
  }
  // A buffer of at least `bytes` the algorithms may use within one call;
  // kept across calls so large ones do not fault fresh pages in each time.
  unsigned char* Scratch(size_t bytes) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
  }
  Link* link(int peer) {
    return parent_ != nullptr ? parent_->link(members_[peer]) : mesh_.links[peer].get();
  }
  // The buffers the ranks of this host can map (a sub-communicator shares
  // its parent's).
  SharedBuffers& shared_buffers() {
    return parent_ != nullptr ? parent_->shared_buffers() : shared_buffers_;
  }
  // This rank's shared-memory control block; null without shared memory.
  HostControl* own_control() {
    if (parent_ != nullptr) return parent_->own_control();
    return mesh_.layout ? mesh_.layout->control(mesh_.segments[mesh_.local_rank].data()) : nullptr;
  }

  // Sequence number of the next collective; identical on all ranks because
  // all ranks call collectives in the same order.
  uint64_t NextCall() { return ++calls_; }
  Deadline CallDeadline() const { return Deadline::AfterSeconds(options_.timeout_seconds); }

  // OK while healthy; otherwise the error that broke this communicator.
  const Status& failure() const {
    return failure_.ok() && parent_ != nullptr ? parent_->failure() : failure_;
  }
  // Records `status` as the failure (the first one wins), publishes it for
  // the peers and closes every link. Returns the recorded failure.
  Status Fail(const Status& status);
  // Thread-safe, from any thread: breaks the communicator for `status` while
  // another thread may be inside a collective. Closes every link, so that
  // thread's wait fails at once; the failure it then records (and publishes
  // to the peers) is `status`, not the closed link.
  void Interrupt(const Status& status);
  // The error for a failure seen on the link to `peer` (`cause`): names the
  // peer and, when the peer published why it gave up, carries that reason.
  // `reason_wait_seconds`: how long the reason may take to appear (0 for a
  // peer known to have exited: what it published is there already).
  Status PeerError(int peer, const Status& cause, const std::string& during,
                   double reason_wait_seconds = 1.0);
  // Checks that `peer`, when it is on this host, has neither exited nor
  // given up. Only the peer being waited for is checked: a peer that finished
  // its part and exited normally is no error for a rank waiting on another.
  Status CheckPeerAlive(int peer, const std::string& during);
  // A kTimeout naming who we were waiting for.
  Status TimeoutError(int peer, const std::string& during) const;

  // Observes the phases inside the collectives run here (the engine's
  // timeline sets it while it records); none by default, so an unobserved
  // phase costs one test.
  using PhaseObserver =
      std::function<void(const char* phase, Clock::time_point start, Clock::time_point end)>;
  void set_phase_observer(PhaseObserver observer) { phase_observer_ = std::move(observer); }
  // Reports phase `phase` as running from `start` until now.
  void Phase(const char* phase, Clock::time_point start) {
    if (phase_observer_) phase_observer_(phase, start, Clock::now());
  }
  bool observing_phases() const { return static_cast<bool>(phase_observer_); }

 private:
  Mesh mesh_;                       // a sub-communicator's has peers but no links or segments
  Communicator* parent_ = nullptr;  // set for a sub-communicator
  std::vector<int> members_;        // sub-communicator: parent rank of each rank
  std::unique_ptr<StoreClient> store_;
  CommunicatorOptions options_;
  uint64_t calls_ = 0;
  Status failure_;
  std::mutex interrupt_mu_;
  Status interrupt_;  // guarded by interrupt_mu_: set by Interrupt, wins in Fail
  PhaseObserver phase_observer_;
  std::vector<unsigned char> scratch_;
  SharedBuffers shared_buffers_;  // unused by a sub-communicator
};

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_COMMUNICATOR_H_
