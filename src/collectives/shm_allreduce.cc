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
// The message may be several buffers (pieces) taken as one concatenation:
// every copy and reduction walks the pieces a range covers (ForRange), so
// fused tensors need no fusion buffer.
//
// The first chunk's slot header carries the CallHeader; every rank compares
// all headers, so a mismatch is seen by every rank at the same step.
//
// Reduce-scatter is the same run keeping one range of the result per rank:
// a rank reduces its slice of each chunk into its own slot (no output
// buffer of the full size), copies the part of it inside its range out, and
// in the out phase copies only the peers' slices that fall in its range.
#include "collectives/shm_allreduce.h"

#include <algorithm>
#include <cstring>

#include "collectives/reduce_kernels.h"
#include "collectives/shm_peers.h"

namespace cohort {
namespace {

class ShmAllreduceRun {
 public:
  // `keep`: reduce-scatter, keeping only elements [keep->begin, keep->end) of
  // the result, written to keep->recv (the pieces' recv pointers are unused).
  ShmAllreduceRun(Communicator& comm, const std::vector<AllreducePiece>& pieces, DataType type,
                  ReduceOp op, double prescale, double postscale, const CallHeader& header,
                  const KeptRange* keep = nullptr)
      : comm_(comm),
        peers_(comm, keep != nullptr ? "reducescatter" : "allreduce"),
        n_(peers_.size()),
        me_(peers_.me()),
        pieces_(pieces),
        starts_(Starts(pieces)),
        count_(starts_.back()),
        type_(type),
        esize_(DataTypeSize(type)),
        op_(op),
        prescale_(prescale),
        postscale_(postscale),
        header_(header),
        keep_(keep) {}

  // starts[i]: the element where piece i begins in the concatenation; the
  // last entry is the total count.
  static std::vector<size_t> Starts(const std::vector<AllreducePiece>& pieces) {
    std::vector<size_t> starts(1, 0);
    for (const AllreducePiece& p : pieces) starts.push_back(starts.back() + p.count);
    return starts;
  }

  // Calls f(send, recv, k, n) for each run of n elements of the pieces that
  // elements [at, at+len) of the concatenation cover; k counts from `at`.
  template <typename F>
  void ForRange(size_t at, size_t len, F f) const {
    size_t i = std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin() - 1;
    for (size_t k = 0; k < len; ++i) {
      const size_t off = at + k - starts_[i];
      const size_t n = std::min(len - k, pieces_[i].count - off);
      if (n == 0) continue;  // empty piece
      f(static_cast<const unsigned char*>(pieces_[i].send) + off * esize_,
        static_cast<unsigned char*>(pieces_[i].recv) + off * esize_, k, n);
      k += n;
    }
  }

  Status Run() {
    const uint64_t first = peers_.first_chunk();
    if (count_ * esize_ <= std::min(peers_.slot_bytes(), comm_.options().small_message_bytes)) {
      return SmallRound(first);
    }
    const size_t chunk_elems = peers_.slot_bytes() / esize_;
    const size_t chunks = (count_ + chunk_elems - 1) / chunk_elems;
    for (size_t c = 0; c < chunks; ++c) {
      COHORT_RETURN_IF_ERROR(CopyIn(first + c, c * chunk_elems, ChunkLen(c, chunk_elems)));
      COHORT_RETURN_IF_ERROR(
          ReduceSlice(first + c, c == 0, c * chunk_elems, ChunkLen(c, chunk_elems)));
      if (c > 0) {
        COHORT_RETURN_IF_ERROR(
            CopyOut(first + c - 1, (c - 1) * chunk_elems, ChunkLen(c - 1, chunk_elems)));
      }
    }
    return CopyOut(first + chunks - 1, (chunks - 1) * chunk_elems,
                   ChunkLen(chunks - 1, chunk_elems));
  }

 private:
  unsigned char* Slot(int l, uint64_t g) { return peers_.Slot(l, g); }
  // Reduce-scatter: copies the elements of [at, at+n) (held at `src`) that
  // lie in the kept range into its output.
  void Keep(size_t at, const unsigned char* src, size_t n) {
    const size_t lo = std::max(at, keep_->begin), hi = std::min(at + n, keep_->end);
    if (lo >= hi) return;
    std::memcpy(static_cast<unsigned char*>(keep_->recv) + (lo - keep_->begin) * esize_,
                src + (lo - at) * esize_, (hi - lo) * esize_);
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

  // Publishes my input for chunk g (elements [at, at+len)), once its slot is free.
  Status CopyIn(uint64_t g, size_t at, size_t len) {
    COHORT_RETURN_IF_ERROR(peers_.WaitSlotFree(g));
    *peers_.Header(me_, g) = header_;
    unsigned char* slot = Slot(me_, g);
    for (int l = 0; l < n_; ++l) {
      if (l == me_) continue;
      const size_t b = SliceBegin(l, len), e = SliceBegin(l + 1, len);
      ForRange(at + b, e - b, [&](const unsigned char* send, unsigned char*, size_t k, size_t n) {
        ScaleCopy(slot + (b + k) * esize_, send, n, type_, prescale_);
      });
    }
    peers_.Publish(ShmCounter::kIn, g + 1);
    return Status::OK();
  }

  Status ReduceSlice(uint64_t g, bool check_headers, size_t at, size_t len) {
    COHORT_RETURN_IF_ERROR(peers_.WaitForPeers(ShmCounter::kIn, g + 1));
    if (check_headers) COHORT_RETURN_IF_ERROR(peers_.CheckHeaders(g, header_));
    const size_t b = SliceBegin(me_, len), e = SliceBegin(me_ + 1, len);
    ForRange(at + b, e - b, [&](const unsigned char* mine, unsigned char* out, size_t k, size_t n) {
      unsigned char* slot = Slot(me_, g) + (b + k) * esize_;
      if (keep_ != nullptr) out = slot;  // reduce-scatter: the slot is the only full-size place
      if (prescale_ != 1.0) {
        ScaleCopy(out, mine, n, type_, prescale_);
        mine = out;
      }
      bool first = true;
      for (int l = 0; l < n_; ++l) {
        if (l == me_) continue;
        ReduceTwo(out, first ? mine : out, Slot(l, g) + (b + k) * esize_, n, type_, op_);
        first = false;
      }
      FinishReduction(out, n, type_, op_, n_, postscale_);
      if (keep_ != nullptr) {
        Keep(at + b + k, out, n);
      } else {
        std::memcpy(slot, out, n * esize_);
      }
    });
    peers_.Publish(ShmCounter::kReduced, g + 1);
    return Status::OK();
  }

  Status CopyOut(uint64_t g, size_t at, size_t len) {
    COHORT_RETURN_IF_ERROR(peers_.WaitForPeers(ShmCounter::kReduced, g + 1));
    for (int l = 0; l < n_; ++l) {
      if (l == me_) continue;
      const size_t b = SliceBegin(l, len), e = SliceBegin(l + 1, len);
      const unsigned char* slot = Slot(l, g);
      if (keep_ != nullptr) {
        Keep(at + b, slot + b * esize_, e - b);
        continue;
      }
      ForRange(at + b, e - b, [&](const unsigned char*, unsigned char* recv, size_t k, size_t n) {
        std::memcpy(recv, slot + (b + k) * esize_, n * esize_);
      });
    }
    peers_.Publish(ShmCounter::kOut, g + 1);
    return Status::OK();
  }

  Status SmallRound(uint64_t g) {
    COHORT_RETURN_IF_ERROR(peers_.WaitSlotFree(g));
    *peers_.Header(me_, g) = header_;
    unsigned char* slot = Slot(me_, g);
    ForRange(0, count_, [&](const unsigned char* send, unsigned char*, size_t k, size_t n) {
      ScaleCopy(slot + k * esize_, send, n, type_, prescale_);
    });
    peers_.Publish(ShmCounter::kIn, g + 1);
    COHORT_RETURN_IF_ERROR(peers_.WaitForPeers(ShmCounter::kIn, g + 1));
    COHORT_RETURN_IF_ERROR(peers_.CheckHeaders(g, header_));
    if (keep_ != nullptr) {
      KeepRound(g);
    } else {
      ReduceAllSlots(g);
    }
    peers_.Set(ShmCounter::kReduced, g + 1);
    peers_.Publish(ShmCounter::kOut, g + 1);
    return Status::OK();
  }

  // Small messages: every rank reduces all slots in rank order (so all
  // compute the same bits); reduce-scatter only over its kept range.
  void ReduceAllSlots(uint64_t g) {
    ForRange(0, count_, [&](const unsigned char*, unsigned char* recv, size_t k, size_t n) {
      ReduceSlotsInto(recv, g, k * esize_, n);
    });
  }
  void KeepRound(uint64_t g) {
    const size_t n = keep_->end - keep_->begin;
    if (n > 0)
      ReduceSlotsInto(static_cast<unsigned char*>(keep_->recv), g, keep_->begin * esize_, n);
  }
  void ReduceSlotsInto(unsigned char* recv, uint64_t g, size_t off, size_t n) {
    if (n_ == 1) {
      std::memcpy(recv, Slot(0, g) + off, n * esize_);
    } else {
      ReduceTwo(recv, Slot(0, g) + off, Slot(1, g) + off, n, type_, op_);
      for (int l = 2; l < n_; ++l) ReduceTwo(recv, recv, Slot(l, g) + off, n, type_, op_);
    }
    FinishReduction(recv, n, type_, op_, n_, postscale_);
  }

  Communicator& comm_;
  ShmPeers peers_;
  const int n_;
  const int me_;
  const std::vector<AllreducePiece>& pieces_;
  const std::vector<size_t> starts_;
  const size_t count_;
  const DataType type_;
  const size_t esize_;
  const ReduceOp op_;
  const double prescale_;
  const double postscale_;
  const CallHeader header_;
  const KeptRange* keep_;
};

}  // namespace

Status ShmAllreduce(Communicator& comm, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op, double prescale, double postscale, const CallHeader& header) {
  return ShmAllreduce(comm, {AllreducePiece{send, recv, count}}, type, op, prescale, postscale,
                      header);
}

Status ShmAllreduce(Communicator& comm, const std::vector<AllreducePiece>& pieces, DataType type,
                    ReduceOp op, double prescale, double postscale, const CallHeader& header) {
  return ShmAllreduceRun(comm, pieces, type, op, prescale, postscale, header).Run();
}

Status ShmReduceScatter(Communicator& comm, const void* send, size_t count, const KeptRange& keep,
                        DataType type, ReduceOp op, const CallHeader& header) {
  // The piece's recv is never written in this mode (the kept range goes to
  // keep.recv); it points at `send` only to stay a valid pointer.
  return ShmAllreduceRun(comm, {AllreducePiece{send, const_cast<void*>(send), count}}, type, op,
                         1.0, 1.0, header, &keep)
      .Run();
}

}  // namespace cohort
