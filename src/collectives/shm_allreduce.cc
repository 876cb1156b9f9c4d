// Shared-memory allreduce: every local rank reduces a disjoint slice of each
// chunk in parallel, reading its peers' inputs straight from their slots.
//
// The message is cut into chunks of one slot; chunk g (numbered across calls,
// so g = my in_seq) uses slot g % K of every rank. Per chunk, rank l:
//   in:     copies the slices that others reduce into its slot; in_seq = g+1
//   reduce: waits for every in_seq > g, reduces slice l from its own input and
//           the peers' slots into its output and its slot; red_seq = g+1
//   out:    waits for every red_seq > g, copies the peers' result slices into
//           its output; out_seq = g+1
// A slot is rewritten only after every peer's out_seq shows it has finished
// reading the chunk that last used it. The loop runs in(c), reduce(c),
// out(c-1), so one rank's copies overlap the others' reductions; with K >= 3
// slots this cannot deadlock.
//
// Small messages (one slot or less) take a single round instead: each rank
// copies its whole input into its slot and every rank reduces all slots in
// rank order, so all ranks compute bit-identical results with one wait.
//
// The first chunk's slot header carries the CallHeader; every rank compares
// all headers, so a mismatch is seen by every rank at the same step.
#include "collectives/shm_allreduce.h"

#include <algorithm>
#include <cstring>

#include "collectives/reduce_kernels.h"
#include "net/shm_backoff.h"

namespace cohort {
namespace {

// While waiting (see net/shm_backoff.h), check liveness and the deadline
// every kCheckInterval.
constexpr auto kCheckInterval = std::chrono::milliseconds(100);

enum class Counter { kIn, kReduced, kOut };

class ShmAllreduceRun {
 public:
  ShmAllreduceRun(Communicator& comm, const void* send, void* recv, size_t count, DataType type,
                  ReduceOp op, double prescale, double postscale, const CallHeader& header)
      : comm_(comm),
        mesh_(comm.mesh()),
        layout_(*mesh_.layout),
        n_(mesh_.local_size),
        me_(mesh_.local_rank),
        send_(static_cast<const unsigned char*>(send)),
        recv_(static_cast<unsigned char*>(recv)),
        count_(count),
        type_(type),
        esize_(DataTypeSize(type)),
        op_(op),
        prescale_(prescale),
        postscale_(postscale),
        header_(header),
        deadline_(comm.CallDeadline()) {}

  Status Run() {
    const uint64_t first = Control(me_)->in_seq.load(std::memory_order_relaxed);
    if (count_ * esize_ <= std::min(layout_.slot_bytes(), comm_.options().small_message_bytes)) {
      return SmallRound(first);
    }
    const size_t chunk_elems = layout_.slot_bytes() / esize_;
    const size_t chunks = (count_ + chunk_elems - 1) / chunk_elems;
    for (size_t c = 0; c < chunks; ++c) {
      COHORT_RETURN_IF_ERROR(CopyIn(first + c, c * chunk_elems, ChunkLen(c, chunk_elems)));
      COHORT_RETURN_IF_ERROR(ReduceSlice(first + c, c == 0, c * chunk_elems,
                                         ChunkLen(c, chunk_elems)));
      if (c > 0) {
        COHORT_RETURN_IF_ERROR(CopyOut(first + c - 1, (c - 1) * chunk_elems,
                                       ChunkLen(c - 1, chunk_elems)));
      }
    }
    return CopyOut(first + chunks - 1, (chunks - 1) * chunk_elems,
                   ChunkLen(chunks - 1, chunk_elems));
  }

 private:
  HostControl* Control(int l) { return layout_.control(mesh_.segments[l].data()); }
  unsigned char* Slot(int l, uint64_t g) {
    return layout_.slot_data(mesh_.segments[l].data(), static_cast<int>(g % layout_.num_slots()));
  }
  CallHeader* Header(int l, uint64_t g) {
    return static_cast<CallHeader*>(
        layout_.slot_header(mesh_.segments[l].data(), static_cast<int>(g % layout_.num_slots())));
  }
  std::atomic<uint64_t>& CounterOf(int l, Counter which) {
    HostControl* c = Control(l);
    return which == Counter::kIn ? c->in_seq : which == Counter::kReduced ? c->red_seq : c->out_seq;
  }
  size_t ChunkLen(size_t c, size_t chunk_elems) const {
    return std::min(chunk_elems, count_ - c * chunk_elems);
  }
  // Slice l of a chunk of `len` elements: [SliceBegin(l), SliceBegin(l+1)).
  // Slices are multiples of 16 elements so each starts on its own cache line.
  size_t SliceBegin(int l, size_t len) const {
    const size_t per = ((len + n_ - 1) / n_ + 15) / 16 * 16;
    return std::min(len, per * l);
  }

  // Waits until every peer's counter is at least `target`.
  Status WaitForPeers(Counter which, uint64_t target) {
    for (int l = 0; l < n_; ++l) {
      if (l == me_) continue;
      std::atomic<uint64_t>& counter = CounterOf(l, which);
      auto reached = [&] { return counter.load(std::memory_order_acquire) >= target; };
      if (reached()) continue;
      ShmBackoff backoff(Control(me_));
      Clock::time_point next_check = Clock::now() + kCheckInterval;
      unsigned rounds = 0;
      while (!reached()) {
        backoff.Idle(reached);
        if (++rounds % 1024 == 0 && Clock::now() >= next_check) {
          COHORT_RETURN_IF_ERROR(CheckWaiting(l));
          next_check = Clock::now() + kCheckInterval;
        }
      }
    }
    return Status::OK();
  }

  // Publishes progress and wakes any peer sleeping on it.
  void Publish(Counter which, uint64_t value) {
    CounterOf(me_, which).store(value, std::memory_order_seq_cst);
    for (int l = 0; l < n_; ++l) {
      if (l != me_) RingDoorbell(Control(l));
    }
  }

  Status CheckWaiting(int l) {
    Status alive = comm_.CheckPeerAlive(mesh_.local_ranks[l], "allreduce");
    if (!alive.ok()) return comm_.Fail(alive);
    if (deadline_.Expired()) return comm_.Fail(comm_.TimeoutError(mesh_.local_ranks[l], "allreduce"));
    return Status::OK();
  }

  Status CheckHeaders(uint64_t g) {
    for (int l = 0; l < n_; ++l) {
      if (l == me_) continue;
      Status same = CompareCalls(header_, comm_.rank(), *Header(l, g), mesh_.local_ranks[l]);
      if (!same.ok()) return comm_.Fail(same.WithContext("allreduce"));
    }
    return Status::OK();
  }

  // Publishes my input for chunk g (elements [at, at+len)), once its slot is free.
  Status CopyIn(uint64_t g, size_t at, size_t len) {
    COHORT_RETURN_IF_ERROR(WaitForPeers(Counter::kOut, g + 1 - std::min<uint64_t>(g + 1, layout_.num_slots())));
    *Header(me_, g) = header_;
    for (int l = 0; l < n_; ++l) {
      if (l == me_) continue;
      const size_t b = SliceBegin(l, len), e = SliceBegin(l + 1, len);
      ScaleCopy(Slot(me_, g) + b * esize_, send_ + (at + b) * esize_, e - b, type_, prescale_);
    }
    Publish(Counter::kIn, g + 1);
    return Status::OK();
  }

  Status ReduceSlice(uint64_t g, bool check_headers, size_t at, size_t len) {
    COHORT_RETURN_IF_ERROR(WaitForPeers(Counter::kIn, g + 1));
    if (check_headers) COHORT_RETURN_IF_ERROR(CheckHeaders(g));
    const size_t b = SliceBegin(me_, len), e = SliceBegin(me_ + 1, len);
    unsigned char* out = recv_ + (at + b) * esize_;
    const unsigned char* mine = send_ + (at + b) * esize_;
    if (prescale_ != 1.0) {
      ScaleCopy(out, mine, e - b, type_, prescale_);
      mine = out;
    }
    bool first = true;
    for (int l = 0; l < n_; ++l) {
      if (l == me_) continue;
      ReduceTwo(out, first ? mine : out, Slot(l, g) + b * esize_, e - b, type_, op_);
      first = false;
    }
    FinishReduction(out, e - b, type_, op_, n_, postscale_);
    std::memcpy(Slot(me_, g) + b * esize_, out, (e - b) * esize_);
    Publish(Counter::kReduced, g + 1);
    return Status::OK();
  }

  Status CopyOut(uint64_t g, size_t at, size_t len) {
    COHORT_RETURN_IF_ERROR(WaitForPeers(Counter::kReduced, g + 1));
    for (int l = 0; l < n_; ++l) {
      if (l == me_) continue;
      const size_t b = SliceBegin(l, len), e = SliceBegin(l + 1, len);
      std::memcpy(recv_ + (at + b) * esize_, Slot(l, g) + b * esize_, (e - b) * esize_);
    }
    Publish(Counter::kOut, g + 1);
    return Status::OK();
  }

  Status SmallRound(uint64_t g) {
    COHORT_RETURN_IF_ERROR(WaitForPeers(Counter::kOut, g + 1 - std::min<uint64_t>(g + 1, layout_.num_slots())));
    *Header(me_, g) = header_;
    ScaleCopy(Slot(me_, g), send_, count_, type_, prescale_);
    Publish(Counter::kIn, g + 1);
    COHORT_RETURN_IF_ERROR(WaitForPeers(Counter::kIn, g + 1));
    COHORT_RETURN_IF_ERROR(CheckHeaders(g));
    if (n_ == 1) {
      std::memcpy(recv_, Slot(0, g), count_ * esize_);
    } else {
      ReduceTwo(recv_, Slot(0, g), Slot(1, g), count_, type_, op_);
      for (int l = 2; l < n_; ++l) ReduceTwo(recv_, recv_, Slot(l, g), count_, type_, op_);
    }
    FinishReduction(recv_, count_, type_, op_, n_, postscale_);
    CounterOf(me_, Counter::kReduced).store(g + 1, std::memory_order_seq_cst);
    Publish(Counter::kOut, g + 1);
    return Status::OK();
  }

  Communicator& comm_;
  Mesh& mesh_;
  const HostSegmentLayout& layout_;
  const int n_;
  const int me_;
  const unsigned char* send_;
  unsigned char* recv_;
  const size_t count_;
  const DataType type_;
  const size_t esize_;
  const ReduceOp op_;
  const double prescale_;
  const double postscale_;
  const CallHeader header_;
  const Deadline deadline_;
};

}  // namespace

Status ShmAllreduce(Communicator& comm, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op, double prescale, double postscale, const CallHeader& header) {
  return ShmAllreduceRun(comm, send, recv, count, type, op, prescale, postscale, header).Run();
}

}  // namespace cohort

