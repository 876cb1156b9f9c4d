// Allgather among the ranks of a host over CUDA IPC buffers
// (ipc_collectives.h has the algorithm).
#include <algorithm>

#include "collectives/call_header.h"
#include "gpu/transport/ipc_collectives.h"

namespace cohort::gpu {

Status IpcAllgather(IpcPeers& peers, GpuRun& run, DevicePtr send, DevicePtr recv,
                    const std::vector<size_t>& counts, DataType type) {
  const int n = peers.size(), me = peers.me();
  if (static_cast<int>(counts.size()) != n) {
    return peers.comm().Fail(Status::InvalidArgument("allgather: " + std::to_string(counts.size()) +
                                                     " counts for " + std::to_string(n) +
                                                     " ranks"));
  }
  const size_t esize = DataTypeSize(type);
  const std::vector<size_t> offsets = BlockOffsets(counts);
  const DevicePtr my_place = recv + offsets[me] * esize;
  if (send != my_place) {
    COHORT_RETURN_IF_ERROR(run.api.CopyAsync(my_place, send, counts[me] * esize, run.stream));
  }
  if (n == 1) return Status::OK();

  CallHeader header = peers.NextHeader(CollectiveKind::kAllgather, offsets.back(), type);
  header.layout = HashCounts(counts.data(), n);
  const size_t piece = peers.half_bytes() / esize;
  const size_t largest = *std::max_element(counts.begin(), counts.end());
  const size_t rounds = std::max<size_t>(1, (largest + piece - 1) / piece);
  for (size_t k = 0; k < rounds; ++k) {
    const size_t at = k * piece;
    auto length = [&](int l) { return std::min(piece, counts[l] - std::min(counts[l], at)); };
    COHORT_RETURN_IF_ERROR(
        run.api.CopyAsync(peers.Half(me), send + at * esize, length(me) * esize, run.stream));
    COHORT_RETURN_IF_ERROR(peers.Sync(run, header, "blocks copied"));
    for (int l = 0; l < n; ++l) {
      if (l == me) continue;
      COHORT_RETURN_IF_ERROR(run.api.CopyAsync(recv + (offsets[l] + at) * esize, peers.Half(l),
                                               length(l) * esize, run.stream));
    }
    peers.EndChunk();
  }
  return Status::OK();
}

}  // namespace cohort::gpu
