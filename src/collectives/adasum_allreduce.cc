// Adasum allreduce by recursive vector halving over links (see the header).
#include "collectives/adasum_allreduce.h"

#include <utility>
#include <vector>

#include "collectives/reduce_kernels.h"
#include "collectives/transfers.h"

namespace cohort {
namespace {

// Below this squared norm a vector's coefficient stays 1 (Horovod's guard
// against dividing by a zero gradient).
constexpr double kMinNormSquared = 1e-8;

// The sums a.b, |a|^2 and |b|^2 that one combination needs.
struct Dots {
  double ab = 0, aa = 0, bb = 0;
};

template <typename T>
Dots PartialDots(const T* a, const T* b, size_t n) {
  Dots d;
  for (size_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    d.ab += x * y;
    d.aa += x * x;
    d.bb += y * y;
  }
  return d;
}

// out = (1 - ab / 2aa) a + (1 - ab / 2bb) b; out may alias a or b.
template <typename T>
void Combine(T* out, const T* a, const T* b, size_t n, const Dots& d) {
  const double ca = d.aa >= kMinNormSquared ? 1.0 - d.ab / (2.0 * d.aa) : 1.0;
  const double cb = d.bb >= kMinNormSquared ? 1.0 - d.ab / (2.0 * d.bb) : 1.0;
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(ca * a[i] + cb * b[i]);
}

// One run of the algorithm over `data` (count elements of T) on this rank.
template <typename T>
class Adasum {
 public:
  Adasum(Communicator& comm, T* data, size_t count, const CallHeader& header)
      : comm_(comm), data_(data), count_(count), header_(header), transfers_(comm, "adasum") {}

  Status Run() {
    const int n = comm_.size(), r = comm_.rank();
    while (pof2_ * 2 <= n) pof2_ *= 2;
    extra_ = n - pof2_;
    int vrank;  // rank among the pof2_ participants
    if (r < 2 * extra_) {
      if (r % 2 == 0) return SitOut(r + 1);
      COHORT_RETURN_IF_ERROR(TakeNeighbour(r - 1));
      vrank = r / 2;
    } else {
      vrank = r - extra_;
    }
    COHORT_RETURN_IF_ERROR(Halve(vrank));
    COHORT_RETURN_IF_ERROR(Gather(vrank));
    if (r < 2 * extra_) {
      transfers_.PostSend(r - 1, data_, Bytes(count_));
      return transfers_.WaitAll();
    }
    return Status::OK();
  }

 private:
  size_t Bytes(size_t elements) const { return elements * sizeof(T); }
  int RealRank(int v) const { return v < extra_ ? 2 * v + 1 : v + extra_; }

  // An even rank of the first 2 * extra_: hands its vector to `peer` and
  // receives the final result from it.
  Status SitOut(int peer) {
    transfers_.PostHeaderCheck(peer, peer, header_, header_);
    transfers_.PostSend(peer, data_, Bytes(count_));
    transfers_.PostRecv(peer, data_, Bytes(count_));
    return transfers_.WaitAll();
  }

  // The odd partner: combines the even rank's whole vector (the lower rank's,
  // so it is "a") with its own.
  Status TakeNeighbour(int peer) {
    std::vector<T> theirs(count_);
    transfers_.PostHeaderCheck(peer, peer, header_, header_);
    transfers_.PostRecv(peer, theirs.data(), Bytes(count_));
    COHORT_RETURN_IF_ERROR(transfers_.WaitAll());
    Combine(data_, theirs.data(), data_, count_, PartialDots(theirs.data(), data_, count_));
    return Status::OK();
  }

  // Sums `d` over the 2 * level participants of vrank's block (recursive
  // doubling; each step adds the lower block's sums to the upper's in the
  // same order on both sides, so every member gets identical values).
  Status SumOverBlock(int vrank, int level, Dots* d) {
    for (int mask = 1; mask <= level; mask *= 2) {
      const int peer = RealRank(vrank ^ mask);
      Dots theirs;
      transfers_.PostSend(peer, d, sizeof(Dots));
      transfers_.PostRecv(peer, &theirs, sizeof(Dots));
      COHORT_RETURN_IF_ERROR(transfers_.WaitAll());
      const bool lower = (vrank & mask) == 0;
      const Dots& lo = lower ? *d : theirs;
      const Dots& hi = lower ? theirs : *d;
      *d = Dots{lo.ab + hi.ab, lo.aa + hi.aa, lo.bb + hi.bb};
    }
    return Status::OK();
  }

  // Reduce phase: at level L the pair (v, v ^ L) splits its common segment;
  // the lower keeps the first half, the upper the second, and each combines
  // its half of the lower block's vector ("a") with the upper block's ("b").
  Status Halve(int vrank) {
    size_t lo = 0, hi = count_;
    std::vector<T> theirs((count_ + 1) / 2);
    for (int level = 1; level < pof2_; level *= 2) {
      const int peer = RealRank(vrank ^ level);
      const size_t mid = lo + (hi - lo) / 2;
      const bool lower = (vrank & level) == 0;
      const size_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const size_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
      const size_t keep = keep_hi - keep_lo;
      if (level == 1) transfers_.PostHeaderCheck(peer, peer, header_, header_);
      transfers_.PostSend(peer, data_ + give_lo, Bytes(give_hi - give_lo));
      transfers_.PostRecv(peer, theirs.data(), Bytes(keep));
      COHORT_RETURN_IF_ERROR(transfers_.WaitAll());
      T* mine = data_ + keep_lo;
      const T* a = lower ? mine : theirs.data();
      const T* b = lower ? theirs.data() : mine;
      Dots d = PartialDots(a, b, keep);
      COHORT_RETURN_IF_ERROR(SumOverBlock(vrank, level, &d));
      Combine(mine, a, b, keep, d);
      segments_.push_back({lo, hi});
      lo = keep_lo;
      hi = keep_hi;
    }
    return Status::OK();
  }

  // Allgather phase: the levels in reverse, each pair swapping the halves
  // it finished so both hold their common segment again.
  Status Gather(int vrank) {
    int level = pof2_ / 2;
    while (!segments_.empty()) {
      const auto [lo, hi] = segments_.back();
      segments_.pop_back();
      const int peer = RealRank(vrank ^ level);
      const size_t mid = lo + (hi - lo) / 2;
      const bool lower = (vrank & level) == 0;
      const size_t mine_lo = lower ? lo : mid, mine_hi = lower ? mid : hi;
      const size_t their_lo = lower ? mid : lo, their_hi = lower ? hi : mid;
      transfers_.PostSend(peer, data_ + mine_lo, Bytes(mine_hi - mine_lo));
      transfers_.PostRecv(peer, data_ + their_lo, Bytes(their_hi - their_lo));
      COHORT_RETURN_IF_ERROR(transfers_.WaitAll());
      level /= 2;
    }
    return Status::OK();
  }

  Communicator& comm_;
  T* data_;
  const size_t count_;
  const CallHeader& header_;
  Transfers transfers_;
  int pof2_ = 1;
  int extra_ = 0;
  std::vector<std::pair<size_t, size_t>> segments_;  // segment before each level's split
};

template <typename T>
Status RunTyped(Communicator& comm, T* data, size_t count, const CallHeader& header) {
  return Adasum<T>(comm, data, count, header).Run();
}

}  // namespace

Status AdasumAllreduce(Communicator& comm, void* buf, size_t count, DataType type, double postscale,
                       const CallHeader& header) {
  switch (type) {
    case DataType::kFloat32:
      COHORT_RETURN_IF_ERROR(RunTyped(comm, static_cast<float*>(buf), count, header));
      break;
    case DataType::kFloat64:
      COHORT_RETURN_IF_ERROR(RunTyped(comm, static_cast<double*>(buf), count, header));
      break;
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      std::vector<float> wide(count);
      Convert16ToFloat32(wide.data(), buf, type, count);
      COHORT_RETURN_IF_ERROR(RunTyped(comm, wide.data(), count, header));
      ConvertFloat32To16(buf, type, wide.data(), count);
      break;
    }
    default:
      return comm.Fail(Status::InvalidArgument(
          std::string("allreduce: op adasum is only for floating-point data, got ") +
          DataTypeName(type)));
  }
  ScaleCopy(buf, buf, count, type, postscale);
  return Status::OK();
}

}  // namespace cohort
