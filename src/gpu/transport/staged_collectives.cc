// The staged transport's flat collectives (staged_collectives.h).
#include "gpu/transport/staged_collectives.h"

#include <numeric>

#include "collectives/collectives.h"
#include "gpu/stream.h"

namespace cohort::gpu {

Result<unsigned char*> StagingBuffers::Host(CudaApi& api, size_t bytes) {
  if (host_.bytes() < bytes) {
    host_.Release();
    Result<PinnedBuffer> grown = PinnedBuffer::Allocate(api, bytes);
    if (!grown.ok()) return grown.status();
    host_ = std::move(*grown);
  }
  return static_cast<unsigned char*>(host_.data());
}

Result<DevicePtr> StagingBuffers::Device(CudaApi& api, size_t bytes) {
  if (device_.bytes() < bytes) {
    device_.Release();
    Result<DeviceBuffer> grown = DeviceBuffer::Allocate(api, bytes);
    if (!grown.ok()) return grown.status();
    device_ = std::move(*grown);
  }
  return device_.ptr();
}

namespace {

size_t Sum(const std::vector<size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), size_t{0});
}

// Waits (bounded) for everything queued on the stream, so the host may read
// (and then write) the pinned buffer. A failure breaks the communicator.
Status WaitForCopies(Communicator& comm, GpuRun& run, const char* what) {
  Status done = SynchronizeStream(run.api, run.stream, run.sync_event, comm.CallDeadline(),
                                  std::string("copying a staged ") + what + " to host memory",
                                  [&comm] { return comm.failure(); });
  return done.ok() ? done : comm.Fail(done);
}

// A staging buffer of `bytes` (at least one byte, so empty calls still get
// a valid pointer for the CPU collective).
Result<unsigned char*> Host(Communicator& comm, GpuRun& run, StagingBuffers& staging,
                            size_t bytes) {
  Result<unsigned char*> host = staging.Host(run.api, std::max<size_t>(bytes, 1));
  if (!host.ok()) return comm.Fail(host.status().WithContext("staging in pinned host memory"));
  return host;
}

}  // namespace

Status StagedAllreduce(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr send,
                       DevicePtr recv, size_t count, const ReduceSpec& spec) {
  const size_t bytes = count * DataTypeSize(spec.type);
  Result<unsigned char*> host = Host(comm, run, staging, bytes);
  if (!host.ok()) return host.status();
  COHORT_RETURN_IF_ERROR(run.api.CopyAsync(AsDevicePtr(*host), send, bytes, run.stream));
  COHORT_RETURN_IF_ERROR(WaitForCopies(comm, run, "allreduce"));
  COHORT_RETURN_IF_ERROR(
      RunAllreduce(comm, *host, *host, count, spec.type, spec.op, spec.prescale, spec.postscale));
  return run.api.CopyAsync(recv, AsDevicePtr(*host), bytes, run.stream);
}

Status StagedReduceScatter(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr send,
                           DevicePtr recv, const std::vector<size_t>& counts,
                           const ReduceSpec& spec) {
  const size_t esize = DataTypeSize(spec.type);
  const size_t total = Sum(counts) * esize, mine = counts[comm.rank()] * esize;
  Result<unsigned char*> host = Host(comm, run, staging, total + mine);
  if (!host.ok()) return host.status();
  unsigned char* in = *host;
  unsigned char* out = *host + total;
  COHORT_RETURN_IF_ERROR(run.api.CopyAsync(AsDevicePtr(in), send, total, run.stream));
  COHORT_RETURN_IF_ERROR(WaitForCopies(comm, run, "reducescatter"));
  COHORT_RETURN_IF_ERROR(RunReduceScatter(comm, in, out, counts.data(), spec.type, spec.op));
  return run.api.CopyAsync(recv, AsDevicePtr(out), mine, run.stream);
}

Status StagedAllgather(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr send,
                       DevicePtr recv, const std::vector<size_t>& counts, DataType type) {
  const size_t esize = DataTypeSize(type);
  const size_t total = Sum(counts) * esize;
  size_t offset = 0;
  for (int r = 0; r < comm.rank(); ++r) offset += counts[r] * esize;
  Result<unsigned char*> host = Host(comm, run, staging, total);
  if (!host.ok()) return host.status();
  // This rank's block goes straight to its place in the gathered buffer.
  COHORT_RETURN_IF_ERROR(run.api.CopyAsync(AsDevicePtr(*host + offset), send,
                                           counts[comm.rank()] * esize, run.stream));
  COHORT_RETURN_IF_ERROR(WaitForCopies(comm, run, "allgather"));
  COHORT_RETURN_IF_ERROR(
      RunAllgather(comm, *host + offset, counts[comm.rank()], *host, counts.data(), type));
  return run.api.CopyAsync(recv, AsDevicePtr(*host), total, run.stream);
}

Status StagedBroadcast(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr buf,
                       size_t count, DataType type, int root) {
  const size_t bytes = count * DataTypeSize(type);
  Result<unsigned char*> host = Host(comm, run, staging, bytes);
  if (!host.ok()) return host.status();
  if (comm.rank() == root) {
    COHORT_RETURN_IF_ERROR(run.api.CopyAsync(AsDevicePtr(*host), buf, bytes, run.stream));
  }
  COHORT_RETURN_IF_ERROR(WaitForCopies(comm, run, "broadcast"));
  COHORT_RETURN_IF_ERROR(RunBroadcast(comm, *host, count, type, root));
  if (comm.rank() == root) return Status::OK();
  return run.api.CopyAsync(buf, AsDevicePtr(*host), bytes, run.stream);
}

Status StagedAlltoall(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr send,
                      const std::vector<size_t>& send_counts, DevicePtr recv,
                      const std::vector<size_t>& recv_counts, DataType type) {
  const size_t esize = DataTypeSize(type);
  const size_t in_bytes = Sum(send_counts) * esize, out_bytes = Sum(recv_counts) * esize;
  Result<unsigned char*> host = Host(comm, run, staging, in_bytes + out_bytes);
  if (!host.ok()) return host.status();
  unsigned char* in = *host;
  unsigned char* out = *host + in_bytes;
  COHORT_RETURN_IF_ERROR(run.api.CopyAsync(AsDevicePtr(in), send, in_bytes, run.stream));
  COHORT_RETURN_IF_ERROR(WaitForCopies(comm, run, "alltoall"));
  COHORT_RETURN_IF_ERROR(RunAlltoall(comm, in, send_counts.data(), out, recv_counts.data(), type));
  return run.api.CopyAsync(recv, AsDevicePtr(out), out_bytes, run.stream);
}

}  // namespace cohort::gpu
