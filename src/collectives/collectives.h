// The collectives over a Communicator: argument checks, the call header, and
// the choice of algorithm by message size and topology. The public API
// (include/cohort/cohort.h) forwards here.
//
// Every function fails fast with the communicator's sticky failure once it
// is broken, and any error it returns has broken the communicator (peers are
// told, so no rank is left waiting).
#ifndef COHORT_COLLECTIVES_COLLECTIVES_H_
#define COHORT_COLLECTIVES_COLLECTIVES_H_

#include <string>

#include "cohort/types.h"
#include "collectives/communicator.h"
#include "collectives/shm_allreduce.h"
#include "common/allreduce_algorithms.h"

namespace cohort {

// What kAuto runs for `bytes` on `mesh`: shared memory when every rank is on
// one host; otherwise recursive doubling up to options.small_message_bytes;
// above it hierarchical when several hosts have several ranks each (the same
// number on every host), else the ring.
AllreduceAlgorithm ChooseAllreduceAlgorithm(const Mesh& mesh, size_t bytes,
                                            const CommunicatorOptions& options);

// With `compression`, float32 data travels as float16/bfloat16 (cohort.h).
Status RunAllreduce(Communicator& comm, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op, double prescale, double postscale,
                    AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto,
                    Compression compression = Compression::kNone);
// Several tensors reduced as one message without copying them together
// (the engine's fusion on one host). Only where every rank shares memory:
// CanAllreducePieces(comm).
bool CanAllreducePieces(Communicator& comm);
Status RunAllreducePieces(Communicator& comm, const std::vector<AllreducePiece>& pieces,
                          DataType type, ReduceOp op, double prescale, double postscale);
Status RunReduceScatter(Communicator& comm, const void* send, void* recv, const size_t* recv_counts,
                        DataType type, ReduceOp op);
Status RunAllgather(Communicator& comm, const void* send, size_t send_count, void* recv,
                    const size_t* recv_counts, DataType type);
Status RunBroadcast(Communicator& comm, void* buf, size_t count, DataType type, int root);
Status RunAlltoall(Communicator& comm, const void* send, const size_t* send_counts, void* recv,
                   const size_t* recv_counts, DataType type);
Status RunBarrier(Communicator& comm);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_COLLECTIVES_H_
