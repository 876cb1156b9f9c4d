// Single-copy allreduce and reduce-scatter among the ranks of one host.
//
// Local rank l owns slice l of the message (allreduce: an even split in
// multiples of 16 elements; reduce-scatter: its kept block). For each chunk
// of its slice it reads every peer's input for that chunk into a scratch
// buffer (one copy, straight out of the peer's memory, landing in cache),
// reduces its own input and those into its output, and, for an allreduce,
// writes the result into every peer's output (one copy each). Every byte of
// input is read from memory once and every byte of output written once, by
// the rank that owns its slice; nothing goes through the shared slots.
//
// No rank waits for another between the start and the end of the call:
// slice l of every rank's input is read only by rank l, and slice l of every
// rank's output is written only by rank l (after rank l read that rank's
// slice l, so an allreduce in place is safe). The end waits until every
// rank is done, so no peer touches a buffer after the call returns.
//
// The reduction runs in the same order as the two-copy algorithm's (this
// rank's input first, then the peers' in local rank order), and one rank
// computes each element, so every rank gets the same bits.
#include <algorithm>
#include <cstring>

#include "collectives/cma_call.h"
#include "collectives/cma_collectives.h"
#include "collectives/reduce_kernels.h"

namespace cohort {
namespace {

// Elements per chunk: the peers' inputs for one chunk stay in cache between
// the copy and the reduction.
constexpr size_t kChunkBytes = 256 << 10;

uint64_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

class CmaAllreduceRun {
 public:
  // `keep`: reduce-scatter, keeping elements [keep->begin, keep->end) of the
  // result in keep->recv (the pieces' recv pointers are unused).
  CmaAllreduceRun(Communicator& comm, const std::vector<AllreducePiece>& pieces, DataType type,
                  ReduceOp op, double prescale, double postscale, const KeptRange* keep)
      : comm_(comm),
        call_(comm, keep != nullptr ? "reducescatter" : "allreduce"),
        n_(call_.size()),
        me_(call_.me()),
        pieces_(pieces),
        type_(type),
        esize_(DataTypeSize(type)),
        op_(op),
        prescale_(prescale),
        postscale_(postscale),
        keep_(keep),
        chunk_elems_(
            std::max<size_t>(1, std::min(kChunkBytes, comm.mesh().layout->slot_bytes()) / esize_)) {
    starts_.push_back(0);
    for (const AllreducePiece& p : pieces) starts_.push_back(starts_.back() + p.count);
  }

  Status Run(const CallHeader& header) {
    std::vector<CmaPiece> mine;
    for (const AllreducePiece& p : pieces_)
      mine.push_back({Address(p.send), Address(p.recv), p.count});
    COHORT_RETURN_IF_ERROR(call_.Start(mine, esize_, header));
    // The reduction reads the peers' inputs where they lie when every one is
    // mappable; a prescale must not touch them, so it copies them first.
    direct_inputs_ = prescale_ == 1.0 && AllInputsDirect();
    const size_t count = starts_.back();
    const size_t begin = keep_ != nullptr ? keep_->begin : SliceBegin(me_, count);
    const size_t end = keep_ != nullptr ? keep_->end : SliceBegin(me_ + 1, count);
    unsigned char* scratch = comm_.Scratch((n_ - 1) * chunk_elems_ * esize_);
    for (size_t at = begin; at < end; at += chunk_elems_) {
      const size_t len = std::min(chunk_elems_, end - at);
      for (int l = 0, j = 0; l < n_; ++l) {
        if (l == me_) continue;
        if (!direct_inputs_) {
          COHORT_RETURN_IF_ERROR(call_.Read(l, Peer(scratch, j), Remote(l, at, len, false)));
        }
        ++j;
      }
      Reduce(at, len, scratch);
      if (keep_ == nullptr) {
        const std::vector<iovec> result = LocalRecv(at, len);
        for (int step = 1; step < n_; ++step) {
          const int l = (me_ + step) % n_;  // spread the writes over the peers
          COHORT_RETURN_IF_ERROR(call_.Write(l, result, Remote(l, at, len, true)));
        }
      }
    }
    return call_.Finish();
  }

 private:
  // Slice l of `count` elements: [SliceBegin(l), SliceBegin(l+1)), multiples
  // of 16 elements so slices start on their own cache lines.
  size_t SliceBegin(int l, size_t count) const {
    const size_t per = ((count + n_ - 1) / n_ + 15) / 16 * 16;
    return std::min(count, per * l);
  }
  unsigned char* Peer(unsigned char* scratch, int j) const {
    return scratch + static_cast<size_t>(j) * chunk_elems_ * esize_;
  }

  // Calls f(piece, offset, k, n) for each run of n elements of the pieces
  // that elements [at, at+len) of the concatenation cover; k counts from at.
  template <typename F>
  void ForRange(size_t at, size_t len, F f) const {
    size_t i = std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin() - 1;
    for (size_t k = 0; k < len; ++i) {
      const size_t off = at + k - starts_[i];
      const size_t n = std::min(len - k, pieces_[i].count - off);
      if (n == 0) continue;  // empty piece
      f(i, off, k, n);
      k += n;
    }
  }

  bool AllInputsDirect() {
    for (int l = 0; l < n_; ++l) {
      if (l == me_) continue;
      const CmaPiece* table = call_.pieces(l);
      for (size_t i = 0; i < pieces_.size(); ++i) {
        if (table[i].count != 0 &&
            call_.Direct(l, table[i].send, table[i].count * esize_) == nullptr)
          return false;
      }
    }
    return true;
  }
  // Local rank l's input for elements [k + at, k + at + n) of piece i, where
  // the reduction reads it: in its buffer, or in the scratch copy (peer j).
  const unsigned char* Input(int l, int j, size_t i, size_t off, size_t k, size_t n,
                             unsigned char* scratch) {
    if (!direct_inputs_) return Peer(scratch, j) + k * esize_;
    return call_.Direct(l, call_.pieces(l)[i].send + off * esize_, n * esize_);
  }

  // Local rank l's input (or output) for elements [at, at+len).
  std::vector<RemoteRange> Remote(int l, size_t at, size_t len, bool recv) {
    const CmaPiece* table = call_.pieces(l);
    std::vector<RemoteRange> ranges;
    ForRange(at, len, [&](size_t i, size_t off, size_t, size_t n) {
      ranges.push_back({(recv ? table[i].recv : table[i].send) + off * esize_, n * esize_});
    });
    return ranges;
  }
  std::vector<iovec> LocalRecv(size_t at, size_t len) const {
    std::vector<iovec> out;
    ForRange(at, len, [&](size_t i, size_t off, size_t, size_t n) {
      out.push_back({static_cast<unsigned char*>(pieces_[i].recv) + off * esize_, n * esize_});
    });
    return out;
  }

  // Reduces elements [at, at+len): this rank's input, then the peers' in
  // local rank order (read into `scratch`), into its output.
  void Reduce(size_t at, size_t len, unsigned char* scratch) {
    ForRange(at, len, [&](size_t i, size_t off, size_t k, size_t n) {
      const unsigned char* mine = static_cast<const unsigned char*>(pieces_[i].send) + off * esize_;
      unsigned char* out =
          keep_ != nullptr
              ? static_cast<unsigned char*>(keep_->recv) + (at + k - keep_->begin) * esize_
              : static_cast<unsigned char*>(pieces_[i].recv) + off * esize_;
      if (prescale_ != 1.0) {
        ScaleCopy(out, mine, n, type_, prescale_);
        mine = out;
      }
      for (int l = 0, j = 0; l < n_; ++l) {
        if (l == me_) continue;
        const unsigned char* theirs = Input(l, j, i, off, k, n, scratch);
        if (prescale_ != 1.0) {
          unsigned char* copy = Peer(scratch, j) + k * esize_;
          ScaleCopy(copy, theirs, n, type_, prescale_);
          theirs = copy;
        }
        ReduceTwo(out, j == 0 ? mine : out, theirs, n, type_, op_);
        ++j;
      }
      FinishReduction(out, n, type_, op_, n_, postscale_);
    });
  }

  Communicator& comm_;
  CmaCall call_;
  const int n_;
  const int me_;
  const std::vector<AllreducePiece>& pieces_;
  std::vector<size_t> starts_;  // starts_[i]: where piece i begins; back(): the total
  const DataType type_;
  const size_t esize_;
  const ReduceOp op_;
  const double prescale_;
  const double postscale_;
  const KeptRange* keep_;
  const size_t chunk_elems_;
  bool direct_inputs_ = false;  // every peer's input is mapped here (set by Run)
};

}  // namespace

bool UseSingleCopy(Communicator& comm, size_t bytes, size_t pieces) {
  const Mesh& mesh = comm.mesh();
  return mesh.single_copy && mesh.all_local_shm() && mesh.size > 1 &&
         bytes >= comm.options().single_copy_bytes && pieces <= CmaCall::MaxPieces(mesh);
}

Status CmaAllreduce(Communicator& comm, const std::vector<AllreducePiece>& pieces, DataType type,
                    ReduceOp op, double prescale, double postscale, const CallHeader& header) {
  return CmaAllreduceRun(comm, pieces, type, op, prescale, postscale, nullptr).Run(header);
}

Status CmaReduceScatter(Communicator& comm, const void* send, size_t count, const KeptRange& keep,
                        DataType type, ReduceOp op, const CallHeader& header) {
  // The piece's recv is never written here (the kept range goes to keep.recv).
  const std::vector<AllreducePiece> pieces = {{send, const_cast<void*>(send), count}};
  return CmaAllreduceRun(comm, pieces, type, op, 1.0, 1.0, &keep).Run(header);
}

}  // namespace cohort
