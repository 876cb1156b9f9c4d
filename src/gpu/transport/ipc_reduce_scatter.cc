// Reduce-scatter among the ranks of a host over CUDA IPC buffers
// (ipc_collectives.h has the algorithm).
#include <algorithm>

#include "collectives/call_header.h"
#include "gpu/transport/ipc_collectives.h"

namespace cohort::gpu {

std::vector<size_t> BlockOffsets(const std::vector<size_t>& counts) {
  std::vector<size_t> offsets(counts.size() + 1, 0);
  for (size_t r = 0; r < counts.size(); ++r) offsets[r + 1] = offsets[r] + counts[r];
  return offsets;
}

Status IpcReduceScatter(IpcPeers& peers, GpuRun& run, DevicePtr send, DevicePtr recv,
                        const std::vector<size_t>& counts, const ReduceSpec& spec) {
  const int n = peers.size(), me = peers.me();
  if (static_cast<int>(counts.size()) != n) {
    return peers.comm().Fail(
        Status::InvalidArgument("reducescatter: " + std::to_string(counts.size()) + " counts for " +
                                std::to_string(n) + " ranks"));
  }
  const size_t esize = DataTypeSize(spec.type);
  const std::vector<size_t> offsets = BlockOffsets(counts);
  const size_t total = offsets.back();
  if (n == 1) return run.reducer.Reduce(recv, {send}, total, spec, run.stream);

  CallHeader header = peers.NextHeader(CollectiveKind::kReduceScatter, total, spec.type);
  header.op = static_cast<int32_t>(spec.op);
  header.prescale = spec.prescale;
  header.postscale = spec.postscale;
  header.layout = HashCounts(counts.data(), n);
  const size_t chunk_elems = peers.half_bytes() / esize;
  const size_t chunks = std::max<size_t>(1, (total + chunk_elems - 1) / chunk_elems);
  const size_t mine_begin = offsets[me], mine_end = offsets[me + 1];
  std::vector<DevicePtr> srcs(n);
  for (size_t c = 0; c < chunks; ++c) {
    const size_t at = c * chunk_elems;
    const size_t len = std::min(chunk_elems, total - std::min(total, at));
    COHORT_RETURN_IF_ERROR(
        run.api.CopyAsync(peers.Half(me), send + at * esize, len * esize, run.stream));
    COHORT_RETURN_IF_ERROR(peers.Sync(run, header, "inputs copied"));
    const size_t lo = std::max(at, mine_begin), hi = std::min(at + len, mine_end);
    if (lo < hi) {
      for (int l = 0; l < n; ++l) srcs[l] = peers.Half(l) + (lo - at) * esize;
      COHORT_RETURN_IF_ERROR(
          run.reducer.Reduce(recv + (lo - mine_begin) * esize, srcs, hi - lo, spec, run.stream));
    }
    peers.EndChunk();
  }
  return Status::OK();
}

}  // namespace cohort::gpu
