// The executors for GPU tensors: the responses the host executors run,
// queued by the process set's GpuCollectives on its own stream after the
// callers' streams (engine/gpu_tensors.h). A handle is complete on the host
// once its work is queued and its completion recorded; the device runs it
// later, and synchronize makes the caller's stream wait for it.
#include <algorithm>
#include <bit>
#include <numeric>

#include "engine/engine.h"
#include "engine/output_buffer.h"

namespace cohort {

namespace {

gpu::DevicePtr Device(const void* p) { return gpu::AsDevicePtr(p); }

// Elements per rank of an allgather (rows announced by each rank) or a
// reduce-scatter (rows each rank receives), and their rows.
std::vector<size_t> Counts(const std::vector<int64_t>& rows, uint64_t row_elements) {
  std::vector<size_t> counts;
  for (int64_t n : rows) counts.push_back(static_cast<size_t>(n) * row_elements);
  return counts;
}

}  // namespace

Status Engine::ExecuteOnDevice(ProcessSet& set, const Response& response) {
  std::vector<Request> reqs;
  for (const std::string& name : response.names) reqs.push_back(TakePending(set.id, name));
  auto complete_all = [&](const Status& s) {
    for (const Request& r : reqs) {
      if (r.handle != 0) handles_.Complete(r.handle, s);
    }
    return s;
  };
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].handle != 0) continue;
    // A rank that joined holds no GPU tensor to take part with: its error
    // breaks the communicator, so the other ranks fail too instead of waiting.
    return complete_all(Status::InvalidArgument(
        "tensor '" + response.names[i] + "' is a GPU tensor: rank " + std::to_string(comm_.rank()) +
        " has joined and takes part only in host allreduces"));
  }
  Result<GpuTensors::SetState*> state = gpu_.ForSet(set.id, *set.comm);
  if (!state.ok()) return complete_all(state.status());
  GpuTensors::SetState& gpu = **state;
  gpu::GpuCollectives& gc = *gpu.collectives;
  std::vector<Request*> waiting;
  for (Request& r : reqs) waiting.push_back(&r);
  Status s = gpu_.WaitForCallers(gpu, waiting);
  const Request& r = reqs[0];
  const Announcement& a = r.what;
  const int n = set.comm->size(), me = set.comm->rank();
  TensorResult result;
  std::vector<int64_t> rows;
  size_t out_elements = 0;
  const Clock::time_point start = Clock::now();
  if (s.ok()) {
    switch (response.kind) {
      case RequestKind::kAllreduce:
        s = DeviceAllreduce(gpu, reqs);
        break;
      case RequestKind::kBroadcast:
        s = gc.Broadcast(Device(r.recv), a.elements(), a.dtype, a.root);
        break;
      case RequestKind::kAllgather:
      case RequestKind::kReduceScatter: {
        const bool gather = response.kind == RequestKind::kAllgather;
        rows = gather ? response.rows_per_rank : ScatterRows(a, n);
        const std::vector<size_t> counts = Counts(rows, a.row_elements());
        out_elements = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
          if (gather || static_cast<int>(i) == me) out_elements += counts[i];
        }
        // A caller's buffer of the wrong size is left alone (as on the
        // host): the collective runs into scratch memory so no rank waits.
        gpu::DevicePtr out = Device(r.recv);
        gpu::DeviceBuffer scratch;
        if (static_cast<size_t>(r.recv_elements) != out_elements) {
          Result<gpu::DeviceBuffer> b =
              gpu::DeviceBuffer::Allocate(*gpu_.api(), out_elements * DataTypeSize(a.dtype) + 1);
          if (!b.ok()) {
            s = b.status();
            break;
          }
          scratch = std::move(*b);
          out = scratch.ptr();
        }
        s = gather ? gc.Allgather(Device(r.send), out, counts, a.dtype)
                   : gc.ReduceScatter(Device(r.send), out, counts, a.dtype, a.op);
        // The scratch buffer is freed when it goes; the driver's free waits for the stream.
        result.shape = a.shape.empty() ? std::vector<int64_t>{0} : a.shape;
        result.shape[0] = gather ? std::accumulate(rows.begin(), rows.end(), int64_t{0}) : rows[me];
        break;
      }
      default:
        s = Status::Internal(std::string(RequestKindName(response.kind)) + " of GPU tensors");
    }
  }
  if (tl_) {
    for (const Request& q : reqs) {
      tl_->Span(q.what.name, "GPU_QUEUE", start, Clock::now(),
                TimelineArgs().Text("transport", gpu::GpuTransportName(gc.transport())));
    }
  }
  std::vector<int64_t> handles;
  for (const Request& q : reqs) handles.push_back(q.handle);
  if (s.ok()) s = gpu_.Finish(set.id, handles);
  if (!s.ok()) return complete_all(s);
  if (response.kind == RequestKind::kAllgather || response.kind == RequestKind::kReduceScatter) {
    handles_.Complete(r.handle, CheckOutputSize(r, out_elements, rows), std::move(result));
    return Status::OK();
  }
  return complete_all(Status::OK());
}

Status Engine::DeviceAllreduce(GpuTensors::SetState& gpu, const std::vector<Request>& reqs) {
  gpu::GpuCollectives& gc = *gpu.collectives;
  const Announcement& a = reqs[0].what;
  const size_t esize = DataTypeSize(a.dtype);
  if (reqs.size() == 1 || a.op == ReduceOp::kAdasum) {
    // Adasum's dot products are per tensor: fused Adasum tensors run one by one.
    for (const Request& r : reqs) {
      CountAllreduce(1, r.what.elements() * esize, /*fused=*/false);
      COHORT_RETURN_IF_ERROR(gc.Allreduce(Device(r.send), Device(r.recv), r.what.elements(),
                                          a.dtype, a.op, a.prescale, a.postscale));
    }
    return Status::OK();
  }
  // Fused: into the set's fusion buffer, one collective, back out, all on the set's stream.
  size_t total = 0;
  for (const Request& r : reqs) total += r.what.elements();
  CountAllreduce(reqs.size(), total * esize, /*fused=*/true);
  gpu::CudaApi& api = *gpu_.api();
  COHORT_RETURN_IF_ERROR(api.UseDevice(gc.device()));
  if (gpu.fusion.bytes() < total * esize) {
    gpu.fusion.Release();  // the driver's free waits for the work that used it
    // A power of two: a few growths at most, whatever the fused sizes.
    Result<gpu::DeviceBuffer> grown =
        gpu::DeviceBuffer::Allocate(api, std::bit_ceil(total * esize));
    if (!grown.ok()) return grown.status().WithContext("GPU fusion buffer");
    gpu.fusion = std::move(*grown);
  }
  const gpu::DevicePtr buf = gpu.fusion.ptr();
  size_t at = 0;
  for (const Request& r : reqs) {
    const size_t bytes = r.what.elements() * esize;
    if (bytes > 0)
      COHORT_RETURN_IF_ERROR(api.CopyAsync(buf + at, Device(r.send), bytes, gc.stream()));
    at += bytes;
  }
  COHORT_RETURN_IF_ERROR(gc.Allreduce(buf, buf, total, a.dtype, a.op, a.prescale, a.postscale));
  at = 0;
  for (const Request& r : reqs) {
    const size_t bytes = r.what.elements() * esize;
    if (bytes > 0)
      COHORT_RETURN_IF_ERROR(api.CopyAsync(Device(r.recv), buf + at, bytes, gc.stream()));
    at += bytes;
  }
  return Status::OK();
}

}  // namespace cohort
