// The cohort C++ runtime API: start the runtime, ask where this process sits
// in the job, and run collectives over every rank of the job.
//
// Every collective is blocking and must be called by all ranks in the same
// order with matching arguments. Arguments that disagree across ranks (element
// counts, types, ops, roots) produce a kMismatch error, never memory
// corruption. Every wait has a deadline (COHORT_TIMEOUT seconds, default 300);
// a peer that dies or disconnects turns into a kPeerFailure error naming the
// rank and host. After a peer failure the runtime stays broken: every later
// call returns the same error until Shutdown().
//
// Thread safety: collectives must be called from one thread at a time.
#ifndef COHORT_COHORT_H_
#define COHORT_COHORT_H_

#include <cstddef>
#include <vector>

#include "cohort/status.h"
#include "cohort/types.h"

namespace cohort {

// Starts the runtime from the environment set by `cohort run`, SLURM's srun,
// Open MPI's mpirun or torchrun, and builds the peer mesh (shared memory with
// ranks on this host, TCP with ranks on other hosts). Calling Init twice
// without Shutdown is an error.
Status Init();
// Tears down the mesh. Safe to call when not initialized.
Status Shutdown();
bool IsInitialized();

// Where this process sits in the job; -1 when not initialized.
int Rank();
int Size();
int LocalRank();   // index among the ranks on this host
int LocalSize();   // number of ranks on this host
int CrossRank();   // index of this host among the job's hosts
int CrossSize();   // number of hosts

struct AllreduceOptions {
  ReduceOp op = ReduceOp::kSum;
  double prescale_factor = 1.0;   // applied to each rank's input before reducing
  double postscale_factor = 1.0;  // applied to the result
};

// recv[i] = op over ranks of (prescale * send[i]), then * postscale.
// `send` may equal `recv` (in place); otherwise they must not overlap.
Status Allreduce(const void* send, void* recv, size_t count, DataType type,
                 const AllreduceOptions& options = {});

// `send` holds sum(recv_counts) elements, the same layout on every rank; rank r
// receives the reduction of block r (recv_counts[r] elements starting at
// sum(recv_counts[0..r))). `recv_counts` has Size() entries, equal on all ranks.
Status ReduceScatter(const void* send, void* recv, const size_t* recv_counts, DataType type,
                     ReduceOp op);

// Learns every rank's element count for a following Allgather.
Result<std::vector<size_t>> AllgatherCounts(size_t my_count);
// recv receives each rank's `send` block in rank order; recv_counts[r] is rank
// r's count (see AllgatherCounts) and send_count must equal recv_counts[Rank()].
Status Allgather(const void* send, size_t send_count, void* recv, const size_t* recv_counts,
                 DataType type);

// Copies root's `buf` into every other rank's `buf`.
Status Broadcast(void* buf, size_t count, DataType type, int root);

// Learns how many elements each rank will send to this one (an alltoall of counts).
Result<std::vector<size_t>> AlltoallCounts(const size_t* send_counts);
// Rank r sends send_counts[p] elements to rank p, taken consecutively from
// `send` in rank order; receives recv_counts[p] from rank p into `recv` in rank
// order.
Status Alltoall(const void* send, const size_t* send_counts, void* recv,
                const size_t* recv_counts, DataType type);

// Returns once every rank has entered the barrier.
Status Barrier();

}  // namespace cohort

#endif  // COHORT_COHORT_H_
