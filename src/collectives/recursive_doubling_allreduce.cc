// Recursive-doubling allreduce over links: log2(n) rounds, each exchanging
// the whole (small) message with one partner. For n that is not a power of
// two, the first 2*extra ranks pair up first: even ones hand their data to
// their odd neighbour, sit out the rounds and get the result back at the end.
// Each pair reduces in rank order, so all ranks get bit-identical results.
#include "collectives/recursive_doubling_allreduce.h"

#include <vector>

#include "collectives/reduce_kernels.h"
#include "collectives/transfers.h"

namespace cohort {

Status RecursiveDoublingAllreduce(Communicator& comm, void* buf, size_t count, DataType type,
                                  ReduceOp op, double postscale, const CallHeader& header) {
  const int n = comm.size();
  const int r = comm.rank();
  const size_t bytes = count * DataTypeSize(type);
  Transfers transfers(comm, "allreduce");
  std::vector<unsigned char> incoming(bytes);
  // Exchange with `peer` and combine, lower rank's data on the left.
  auto exchange = [&](int peer) -> Status {
    transfers.PostHeaderCheck(peer, peer, header, header);
    transfers.PostSend(peer, buf, bytes);
    transfers.PostRecv(peer, incoming.data(), bytes);
    COHORT_RETURN_IF_ERROR(transfers.WaitAll());
    if (peer < r) {
      ReduceTwo(buf, incoming.data(), buf, count, type, op);
    } else {
      ReduceTwo(buf, buf, incoming.data(), count, type, op);
    }
    return Status::OK();
  };

  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
  const int extra = n - pof2;
  int vrank;  // rank among the pof2 participants, or -1 while sitting out
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      transfers.PostHeaderCheck(r + 1, r + 1, header, header);
      transfers.PostSend(r + 1, buf, bytes);
      transfers.PostRecv(r + 1, buf, bytes);  // the final result
      COHORT_RETURN_IF_ERROR(transfers.WaitAll());
      return Status::OK();  // the partner already applied the finishing step
    }
    transfers.PostHeaderCheck(r - 1, r - 1, header, header);
    transfers.PostRecv(r - 1, incoming.data(), bytes);
    COHORT_RETURN_IF_ERROR(transfers.WaitAll());
    ReduceTwo(buf, incoming.data(), buf, count, type, op);
    vrank = r / 2;
  } else {
    vrank = r - extra;
  }
  auto real_rank = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  for (int mask = 1; mask < pof2; mask *= 2) {
    COHORT_RETURN_IF_ERROR(exchange(real_rank(vrank ^ mask)));
  }
  FinishReduction(buf, count, type, op, n, postscale);
  if (r < 2 * extra) {
    transfers.PostSend(r - 1, buf, bytes);
    COHORT_RETURN_IF_ERROR(transfers.WaitAll());
  }
  return Status::OK();
}

}  // namespace cohort
