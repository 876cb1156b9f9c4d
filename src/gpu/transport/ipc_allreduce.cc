// Allreduce among the ranks of a host over CUDA IPC buffers
// (ipc_collectives.h has the algorithm).
#include <algorithm>

#include "collectives/call_header.h"
#include "gpu/transport/ipc_collectives.h"

namespace cohort::gpu {
namespace {

// Slice l of a chunk of `len` elements is [SliceBegin(l), SliceBegin(l+1)):
// multiples of 64 elements, so slices start at least 64-byte aligned.
size_t SliceBegin(int l, int n, size_t len) {
  const size_t per = ((len + n - 1) / n + 63) / 64 * 64;
  return std::min(len, per * static_cast<size_t>(l));
}

}  // namespace

Status IpcAllreduce(IpcPeers& peers, GpuRun& run, DevicePtr send, DevicePtr recv, size_t count,
                    ReduceSpec spec) {
  const int n = peers.size(), me = peers.me();
  const size_t esize = DataTypeSize(spec.type);
  spec.finish = true;
  spec.ranks = n;
  spec.first_prescaled = false;
  if (n == 1) return run.reducer.Reduce(recv, {send}, count, spec, run.stream);

  CallHeader header = peers.NextHeader(CollectiveKind::kAllreduce, count, spec.type);
  header.op = static_cast<int32_t>(spec.op);
  header.prescale = spec.prescale;
  header.postscale = spec.postscale;
  const size_t chunk_elems = peers.half_bytes() / esize;
  const bool one_round =
      count * esize <= std::min(peers.half_bytes(), peers.comm().options().small_message_bytes);
  const size_t chunks = std::max<size_t>(1, (count + chunk_elems - 1) / chunk_elems);
  std::vector<DevicePtr> srcs(n);
  for (size_t c = 0; c < chunks; ++c) {
    const size_t at = c * chunk_elems;
    const size_t len = std::min(chunk_elems, count - std::min(count, at));
    COHORT_RETURN_IF_ERROR(
        run.api.CopyAsync(peers.Half(me), send + at * esize, len * esize, run.stream));
    COHORT_RETURN_IF_ERROR(peers.Sync(run, header, "inputs copied"));
    if (one_round) {
      for (int l = 0; l < n; ++l) srcs[l] = peers.Half(l);
      COHORT_RETURN_IF_ERROR(run.reducer.Reduce(recv + at * esize, srcs, len, spec, run.stream));
      peers.EndChunk();
      continue;
    }
    const size_t b = SliceBegin(me, n, len), e = SliceBegin(me + 1, n, len);
    for (int l = 0; l < n; ++l) srcs[l] = peers.Half(l) + b * esize;
    if (n <= kMaxReduceSources) {
      // In place in this rank's own slice, which no peer reads until the next Sync.
      COHORT_RETURN_IF_ERROR(
          run.reducer.Reduce(peers.Half(me) + b * esize, srcs, e - b, spec, run.stream));
    } else {
      const DevicePtr out = recv + (at + b) * esize;
      COHORT_RETURN_IF_ERROR(run.reducer.Reduce(out, srcs, e - b, spec, run.stream));
      COHORT_RETURN_IF_ERROR(
          run.api.CopyAsync(peers.Half(me) + b * esize, out, (e - b) * esize, run.stream));
    }
    COHORT_RETURN_IF_ERROR(peers.Sync(run, header, "slices reduced"));
    for (int l = 0; l < n; ++l) {
      const size_t lb = SliceBegin(l, n, len), le = SliceBegin(l + 1, n, len);
      COHORT_RETURN_IF_ERROR(run.api.CopyAsync(recv + (at + lb) * esize, peers.Half(l) + lb * esize,
                                               (le - lb) * esize, run.stream));
    }
    peers.EndChunk();
  }
  return Status::OK();
}

}  // namespace cohort::gpu
