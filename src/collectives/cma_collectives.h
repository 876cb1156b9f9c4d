// Single-copy collectives among the ranks of one host: each byte moves once,
// straight from one rank's buffer into another's with process_vm_readv /
// process_vm_writev (net/cma.h), instead of into a shared-memory slot and
// out again (shm_allreduce.h, shm_allgather.h). collectives.cc runs them for
// messages of COHORT_SHM_SINGLE_COPY_BYTES and more where the mesh's probe
// found that the kernel allows it (Mesh::single_copy). Every function
// requires comm.mesh().single_copy and all_local_shm(), and a header whose
// path is kSingleCopy.
#ifndef COHORT_COLLECTIVES_CMA_COLLECTIVES_H_
#define COHORT_COLLECTIVES_CMA_COLLECTIVES_H_

#include <vector>

#include "collectives/call_header.h"
#include "collectives/communicator.h"
#include "collectives/shm_allreduce.h"

namespace cohort {

// Whether the single-copy path may run a call of `bytes` in `pieces`
// buffers on `comm` (its mesh allows it, the size reaches the threshold, the
// pieces fit the table). Every rank decides alike from the same arguments.
bool UseSingleCopy(Communicator& comm, size_t bytes, size_t pieces = 1);

// Allreduce of the pieces taken as one message (send may equal recv): local
// rank l reduces slice l, reading the peers' inputs for it, and writes the
// result into every rank's output.
Status CmaAllreduce(Communicator& comm, const std::vector<AllreducePiece>& pieces, DataType type,
                    ReduceOp op, double prescale, double postscale, const CallHeader& header);
// Reduce-scatter: this rank reduces its kept range from every rank's input.
// `keep.recv` must not overlap `send`.
Status CmaReduceScatter(Communicator& comm, const void* send, size_t count, const KeptRange& keep,
                        DataType type, ReduceOp op, const CallHeader& header);
// Allgather, as ShmAllgather: this rank's block of `recv` holds its input;
// it reads every other block from its owner's `recv`.
Status CmaAllgather(Communicator& comm, void* recv, const std::vector<size_t>& offsets,
                    DataType type, const CallHeader& header);
// Broadcast of `bytes` from `root`: every other rank reads the root's buffer.
Status CmaBroadcast(Communicator& comm, void* buf, size_t bytes, int root,
                    const CallHeader& header);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_CMA_COLLECTIVES_H_
