// Broadcast among the ranks of a host over CUDA IPC buffers
// (ipc_collectives.h has the algorithm).
#include <algorithm>

#include "collectives/call_header.h"
#include "gpu/transport/ipc_collectives.h"

namespace cohort::gpu {

Status IpcBroadcast(IpcPeers& peers, GpuRun& run, DevicePtr buf, size_t count, DataType type,
                    int root) {
  const int n = peers.size(), me = peers.me();
  if (root < 0 || root >= n) {
    return peers.comm().Fail(Status::InvalidArgument("broadcast: root " + std::to_string(root) +
                                                     " is not a rank of this host's " +
                                                     std::to_string(n)));
  }
  if (n == 1) return Status::OK();
  const size_t esize = DataTypeSize(type);
  CallHeader header = peers.NextHeader(CollectiveKind::kBroadcast, count, type);
  header.root = root;
  const size_t piece = peers.half_bytes() / esize;
  const size_t rounds = std::max<size_t>(1, (count + piece - 1) / piece);
  for (size_t k = 0; k < rounds; ++k) {
    const size_t at = k * piece;
    const size_t len = std::min(piece, count - std::min(count, at));
    if (me == root) {
      COHORT_RETURN_IF_ERROR(
          run.api.CopyAsync(peers.Half(root), buf + at * esize, len * esize, run.stream));
    }
    COHORT_RETURN_IF_ERROR(peers.Sync(run, header, "root's piece copied"));
    if (me != root) {
      COHORT_RETURN_IF_ERROR(
          run.api.CopyAsync(buf + at * esize, peers.Half(root), len * esize, run.stream));
    }
    peers.EndChunk();
  }
  return Status::OK();
}

}  // namespace cohort::gpu
