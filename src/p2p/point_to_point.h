// PointToPoint: tagged messages between two ranks (send, receive from one
// rank or from any), for torch.distributed's send/recv. It runs over a mesh of
// its own (shared memory on one host, TCP between hosts, built like the
// collectives' mesh), so its bytes never interleave with a collective's, and
// one progress thread moves the bytes of every posted message, so a send
// completes while its caller waits on something else (isend then irecv on
// both sides of a pair never deadlocks).
//
// Matching follows MPI: a message carries (channel, tag); a receive takes the
// oldest message from its source (or any source) with its channel and tag.
// Messages between one pair with one channel and tag arrive in send order. A
// message nobody has asked for yet is buffered; the progress thread reads
// from every peer while any operation is pending.
#ifndef COHORT_P2P_POINT_TO_POINT_H_
#define COHORT_P2P_POINT_TO_POINT_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cohort/status.h"
#include "collectives/communicator.h"
#include "common/handle_table.h"

namespace cohort {

class PointToPoint {
 public:
  static constexpr int kAnySource = -1;

  // `comm` is the point-to-point mesh's communicator; operations complete
  // handles of `handles` (the engine's table, so waiting, polling and
  // releasing work as for collectives). Starts the progress thread.
  PointToPoint(std::unique_ptr<Communicator> comm, HandleTable& handles);
  // Stops the thread; operations still pending fail ("cohort shut down first").
  ~PointToPoint();

  // Posts a message of `bytes` bytes at `data` to rank `dst`. `data` must stay
  // valid until the handle completes (once the bytes are on their way). Not
  // taken by `dst` within `timeout_seconds`, it fails, and so does every
  // later message with `dst` (the stream between the two is cut).
  Result<int64_t> Send(int dst, int64_t channel, int64_t tag, const void* data, size_t bytes,
                       double timeout_seconds);
  // Posts a receive of exactly `bytes` bytes into `data` from rank `src` (or
  // kAnySource); *source is set to the sender before the handle completes.
  // A message of another size fails the receive, naming both sizes; none
  // within `timeout_seconds` fails it, naming the source.
  Result<int64_t> Recv(int src, int64_t channel, int64_t tag, void* data, size_t bytes, int* source,
                       double timeout_seconds);
  // Gives up on every message, from any thread (the runtime's Abort): the
  // pending and later operations fail with `reason`, which is published for
  // the peers before the links close, so their operations with this rank
  // fail at once with it too instead of at their timeout.
  void Abort(const Status& reason);

 private:
  struct Envelope {  // sent before every message's bytes
    int64_t channel;
    int64_t tag;
    uint64_t bytes;
  };
  struct Op {
    int64_t handle;
    int peer;  // destination, or source (kAnySource)
    Envelope envelope;
    unsigned char* data;
    size_t moved = 0;  // sends: envelope and data bytes; receives: data bytes
    int* source = nullptr;
    Clock::time_point deadline;
    double timeout_seconds = 0;
  };
  // A message read before a receive asked for it.
  struct Early {
    int src;
    Envelope envelope;
    std::vector<unsigned char> data;
    size_t got = 0;
    std::shared_ptr<Op> claimed;  // the receive that will take it once complete
  };
  // What is being read from one peer.
  struct Inbound {
    Envelope envelope{};
    size_t envelope_got = 0;
    std::shared_ptr<Op> direct;    // a matched receive of the right size, read in place
    std::shared_ptr<Early> early;  // or a buffer
  };

  Status CheckPeer(int peer, const char* what) const;
  void Wake();
  void Loop();
  // Moves what can move on every link; under mu_.
  bool MoveBytes();
  bool SendTo(int peer);
  bool ReceiveFrom(int peer);
  // The envelope from `src` is in: find its receive or buffer it.
  void Match(int src, Inbound& in);
  void Deliver(std::shared_ptr<Early> early);  // by value: it erases early_'s copy
  void Finish(const std::shared_ptr<Op>& op, const Status& status);
  // The link to `peer` failed with `cause`: fails everything with it.
  void FailPeer(int peer, const Status& cause);
  // Fails every operation with `peer` with `status`; no more will move.
  void DropPeer(int peer, const Status& status);
  // Fails the operations whose deadline passed.
  void ExpireOperations(Clock::time_point now);
  static std::string Seconds(const Op& op);  // its timeout, "30 s"
  std::string Describe(int peer) const { return comm_->mesh().Describe(peer); }
  bool HasWork() const;

  std::unique_ptr<Communicator> comm_;
  HandleTable& handles_;
  std::mutex mu_;
  std::condition_variable cv_;  // the thread waits here while nothing is pending
  bool stopping_ = false;
  Status aborted_;                   // OK until Abort, then why every operation fails
  std::atomic<bool> posted_{false};  // set by Send/Recv; read by a sleeping thread
  int wake_fd_ = -1;                 // eventfd written by Send/Recv for a thread in poll(2)
  std::vector<std::deque<std::shared_ptr<Op>>> sends_;  // per destination, in order
  std::deque<std::shared_ptr<Op>> receives_;            // posted, unmatched, in order
  std::deque<std::shared_ptr<Early>> early_;            // arrival order
  std::vector<Inbound> inbound_;                        // per source
  std::vector<Status> dead_;                            // per peer: why it is gone
  std::thread thread_;
};

}  // namespace cohort

#endif  // COHORT_P2P_POINT_TO_POINT_H_
