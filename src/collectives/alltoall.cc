// Alltoall with per-rank counts: every pair exchanges directly, all pairs at
// once, driven by one progress loop. Each pair first checks that the
// sender's count for the receiver equals the receiver's count for the sender.
#include "collectives/alltoall.h"

#include <cstring>
#include <vector>

#include "collectives/transfers.h"

namespace cohort {

Status PairwiseAlltoall(Communicator& comm, const void* send, const size_t* send_counts,
                        void* recv, const size_t* recv_counts, DataType type,
                        const CallHeader& header) {
  const int n = comm.size();
  const int r = comm.rank();
  const size_t esize = DataTypeSize(type);
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  std::vector<size_t> send_at(n + 1, 0), recv_at(n + 1, 0);
  for (int p = 0; p < n; ++p) {
    send_at[p + 1] = send_at[p] + send_counts[p];
    recv_at[p + 1] = recv_at[p] + recv_counts[p];
  }
  Transfers transfers(comm, "alltoall");
  // Start with the next rank and go round, so not every rank hits rank 0 first.
  for (int step = 1; step < n; ++step) {
    const int p = (r + step) % n;
    CallHeader mine = header, expected = header;
    mine.count = send_counts[p];
    expected.count = recv_counts[p];
    transfers.PostHeaderCheck(p, p, mine, expected);
    transfers.PostSend(p, in + send_at[p] * esize, send_counts[p] * esize);
    transfers.PostRecv(p, out + recv_at[p] * esize, recv_counts[p] * esize);
  }
  if (send_counts[r] != recv_counts[r]) {
    return comm.Fail(Status::InvalidArgument(
        "alltoall: rank " + std::to_string(r) + " sends " + std::to_string(send_counts[r]) +
        " elements to itself but expects to receive " + std::to_string(recv_counts[r])));
  }
  std::memcpy(out + recv_at[r] * esize, in + send_at[r] * esize, send_counts[r] * esize);
  return transfers.WaitAll();
}

}  // namespace cohort
