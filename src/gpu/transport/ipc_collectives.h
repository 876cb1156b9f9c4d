// Collectives among the ranks of one host over CUDA IPC buffers
// (ipc_peers.h). Every pointer is device memory of this rank's device; all
// device work is queued on run.stream, and a call returns once its last
// chunk's reads are queued (the stream orders whatever comes after). Every
// rank of the host calls the same collective with agreeing arguments (a
// disagreement is a kMismatch on every rank).
//
// Allreduce: chunks of half a buffer. Up to COHORT_SMALL_MESSAGE_BYTES, one
// round: every rank copies its input in, and after one Sync reduces every
// rank's copy in rank order (so every rank gets identical bits). Above it,
// reduce-scatter then gather: rank l reduces slice l of the chunk from all
// buffers into its own buffer, Sync, and every rank copies every slice out.
// Reduce-scatter: one round per chunk, each rank reducing the part of its
// block in the chunk. Allgather and broadcast: each rank (the root) copies
// a piece of its block into its buffer, Sync, the others copy it out.
#ifndef COHORT_GPU_TRANSPORT_IPC_COLLECTIVES_H_
#define COHORT_GPU_TRANSPORT_IPC_COLLECTIVES_H_

#include <vector>

#include "gpu/device_reduce.h"
#include "gpu/transport/gpu_run.h"
#include "gpu/transport/ipc_peers.h"

namespace cohort::gpu {

// recv = reduction over ranks of send (spec: type, op, prescale, postscale;
// `finish` and `ranks` are set here). recv may equal send.
Status IpcAllreduce(IpcPeers& peers, GpuRun& run, DevicePtr send, DevicePtr recv, size_t count,
                    ReduceSpec spec);

// Rank r receives elements [offset_r, offset_r + counts[r]) of the reduction
// of everyone's `send` (sum of counts elements) into `recv`. `spec.finish`
// decides whether the average's division and postscale apply (with
// spec.ranks as divisor): the staged path reduces partial sums first.
Status IpcReduceScatter(IpcPeers& peers, GpuRun& run, DevicePtr send, DevicePtr recv,
                        const std::vector<size_t>& counts, const ReduceSpec& spec);

// recv = every rank's `send` (counts[r] elements each) one after another.
// `send` may already sit at this rank's place in recv.
Status IpcAllgather(IpcPeers& peers, GpuRun& run, DevicePtr send, DevicePtr recv,
                    const std::vector<size_t>& counts, DataType type);

// buf on every rank = buf on `root` (a local rank).
Status IpcBroadcast(IpcPeers& peers, GpuRun& run, DevicePtr buf, size_t count, DataType type,
                    int root);

// Offsets of consecutive blocks of `counts` elements; the last entry is the total.
std::vector<size_t> BlockOffsets(const std::vector<size_t>& counts);

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_IPC_COLLECTIVES_H_
