// c_api.h over cohort.h: converts values at the boundary and reports errors
// through cohort_error. Enum values are passed through unchecked (DataType and
// ReduceOp have int as fixed underlying type, so any int is representable):
// the runtime validates them, and a bad one fails the collective on every
// rank instead of leaving the peers waiting for this one.
#include "cohort/c_api.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cohort/cohort.h"

namespace {

using cohort::DataType;
using cohort::ReduceOp;
using cohort::Status;

static_assert(sizeof(uint64_t) == sizeof(size_t), "counts cross the C ABI as uint64_t");

int Report(const Status& status, cohort_error* err) {
  const int code = static_cast<int>(status.code());
  if (err != nullptr) {
    err->code = code;
    std::strncpy(err->message, status.message().c_str(), sizeof(err->message) - 1);
    err->message[sizeof(err->message) - 1] = '\0';
  }
  return code;
}

// Null pointers and negative counts are rejected here, before a C++ container
// is built from them; every other check is the runtime's.
int BadArgument(const std::string& what, cohort_error* err) {
  return Report(cohort::Status::InvalidArgument(what), err);
}

cohort::Shape ToShape(const int64_t* shape, int ndim) {
  return ndim <= 0 ? cohort::Shape{} : cohort::Shape(shape, shape + ndim);
}

std::vector<int64_t> ToVector(const int64_t* values, int count) {
  return count <= 0 ? std::vector<int64_t>{} : std::vector<int64_t>(values, values + count);
}

bool BadTensor(const char* name, const int64_t* shape, int ndim) {
  return name == nullptr || ndim < 0 || (ndim > 0 && shape == nullptr);
}

// NULL or device -1: host memory.
cohort::Device ToDevice(const cohort_device* d) {
  cohort::Device device;
  if (d != nullptr) {
    device.index = d->device;
    device.stream = d->stream;
  }
  return device;
}

cohort::AllreduceOptions ToOptions(const cohort_allreduce_options* o) {
  cohort::AllreduceOptions options;
  if (o == nullptr) return options;
  options.op = static_cast<ReduceOp>(o->op);
  options.prescale_factor = o->prescale_factor;
  options.postscale_factor = o->postscale_factor;
  options.compression = static_cast<cohort::Compression>(o->compression);
  options.process_set = o->process_set;
  return options;
}

// Stores a call's value (a new handle, a rank, ...) or reports why there is none.
template <typename T, typename Out>
int ReportValue(const cohort::Result<T>& value, Out* out, cohort_error* err) {
  if (!value.ok()) return Report(value.status(), err);
  *out = static_cast<Out>(*value);
  return COHORT_OK;
}

cohort::PowerSgdMatrix ToMatrix(const cohort_powersgd_matrix& m) {
  return cohort::PowerSgdMatrix{m.m, m.error, m.rows, m.cols, m.rank};
}

}  // namespace

// Defined outside the anonymous namespace: c_api.h declares it as an opaque
// struct in the global namespace.
struct cohort_result {
  cohort::TensorResult value;
};

extern "C" {

int cohort_init(cohort_error* err) { return Report(cohort::Init(), err); }
int cohort_shutdown(cohort_error* err) { return Report(cohort::Shutdown(), err); }

int cohort_abort(const char* reason, cohort_error* err) {
  return Report(cohort::Abort(reason == nullptr ? "no reason given" : reason), err);
}
int cohort_is_initialized(void) { return cohort::IsInitialized() ? 1 : 0; }
int cohort_is_running(void) { return cohort::IsRunning() ? 1 : 0; }
int cohort_elastic_rounds(int64_t* joined, int64_t* newest, cohort_error* err) {
  if (joined == nullptr || newest == nullptr)
    return BadArgument("elastic rounds: null pointer", err);
  return Report(cohort::ElasticRounds(joined, newest), err);
}
int cohort_rank(void) { return cohort::Rank(); }
int cohort_size(void) { return cohort::Size(); }
int cohort_local_rank(void) { return cohort::LocalRank(); }
int cohort_local_size(void) { return cohort::LocalSize(); }
int cohort_cross_rank(void) { return cohort::CrossRank(); }
int cohort_cross_size(void) { return cohort::CrossSize(); }
int cohort_shm_single_copy(void) { return cohort::SharedMemorySingleCopy(); }
int cohort_alloc_shared(uint64_t bytes, void** out, cohort_error* err) {
  return Report(cohort::AllocateSharedMemory(bytes, out), err);
}
int cohort_free_shared(void* buffer, cohort_error* err) {
  return Report(cohort::FreeSharedMemory(buffer), err);
}

int cohort_powersgd_project(const cohort_powersgd_matrix* matrix, const float* q_t, float* p,
                            cohort_error* err) {
  if (matrix == nullptr) return BadArgument("PowerSgdProject: null matrix", err);
  return Report(cohort::PowerSgdProject(ToMatrix(*matrix), q_t, p), err);
}
int cohort_powersgd_project_back(const cohort_powersgd_matrix* matrix, const float* p, float* q_t,
                                 cohort_error* err) {
  if (matrix == nullptr) return BadArgument("PowerSgdProjectBack: null matrix", err);
  return Report(cohort::PowerSgdProjectBack(ToMatrix(*matrix), p, q_t), err);
}
int cohort_powersgd_approximate(const cohort_powersgd_matrix* matrix, const float* p,
                                const float* q_t, cohort_error* err) {
  if (matrix == nullptr) return BadArgument("PowerSgdApproximate: null matrix", err);
  return Report(cohort::PowerSgdApproximate(ToMatrix(*matrix), p, q_t), err);
}

int cohort_allreduce(const void* send, void* recv, uint64_t count, int dtype, int op,
                     double prescale, double postscale, cohort_error* err) {
  cohort::AllreduceOptions options{static_cast<ReduceOp>(op), prescale, postscale};
  return Report(cohort::Allreduce(send, recv, count, static_cast<DataType>(dtype), options), err);
}

int cohort_allgather_counts(uint64_t my_count, uint64_t* counts_out, cohort_error* err) {
  cohort::Result<std::vector<size_t>> counts = cohort::AllgatherCounts(my_count);
  if (!counts.ok()) return Report(counts.status(), err);
  std::memcpy(counts_out, counts->data(), counts->size() * sizeof(uint64_t));
  return COHORT_OK;
}

int cohort_add_process_set(const int* ranks, int num_ranks, int* id_out, cohort_error* err) {
  if (num_ranks < 0 || (num_ranks > 0 && ranks == nullptr) || id_out == nullptr) {
    return BadArgument("add process set: null ranks or id pointer, or negative count", err);
  }
  return ReportValue(cohort::AddProcessSet(std::vector<int>(ranks, ranks + num_ranks)), id_out,
                     err);
}

int cohort_remove_process_set(int process_set, cohort_error* err) {
  return Report(cohort::RemoveProcessSet(process_set), err);
}

int cohort_process_set_ranks(int process_set, int* ranks_out, int capacity, int* size_out,
                             cohort_error* err) {
  if (capacity > 0 && ranks_out == nullptr) {
    return BadArgument("process set ranks: null ranks_out with capacity > 0", err);
  }
  cohort::Result<std::vector<int>> ranks = cohort::ProcessSetRanks(process_set);
  if (!ranks.ok()) return Report(ranks.status(), err);
  const int n = static_cast<int>(ranks->size());
  for (int i = 0; i < n && i < capacity; ++i) ranks_out[i] = (*ranks)[i];
  if (size_out != nullptr) *size_out = n;
  return COHORT_OK;
}

int cohort_process_set_rank(int process_set, int* rank_out, cohort_error* err) {
  if (rank_out == nullptr) return BadArgument("process set rank: null rank_out", err);
  return ReportValue(cohort::ProcessSetRank(process_set), rank_out, err);
}

int cohort_process_set_ids(int* ids_out, int capacity) {
  const std::vector<int> ids = cohort::ProcessSetIds();
  const int n = static_cast<int>(ids.size());
  for (int i = 0; ids_out != nullptr && i < n && i < capacity; ++i) ids_out[i] = ids[i];
  return n;
}

int cohort_allreduce_async(const char* name, const void* send, void* recv, const int64_t* shape,
                           int ndim, int dtype, const cohort_allreduce_options* options,
                           int64_t* handle_out, cohort_error* err) {
  return cohort_allreduce_async_on_device(name, send, recv, shape, ndim, dtype, options, nullptr,
                                          handle_out, err);
}

int cohort_allreduce_async_on_device(const char* name, const void* send, void* recv,
                                     const int64_t* shape, int ndim, int dtype,
                                     const cohort_allreduce_options* options,
                                     const cohort_device* device, int64_t* handle_out,
                                     cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("allreduce: null handle_out", err);
  if (BadTensor(name, shape, ndim)) return BadArgument("allreduce: null name or bad shape", err);
  return ReportValue(
      cohort::AllreduceAsync(name, send, recv, ToShape(shape, ndim), static_cast<DataType>(dtype),
                             ToOptions(options), nullptr, ToDevice(device)),
      handle_out, err);
}

int cohort_grouped_allreduce_async(int count, const char* const* names, const void* const* sends,
                                   void* const* recvs, const int64_t* const* shapes,
                                   const int* ndims, int dtype,
                                   const cohort_allreduce_options* options, int64_t* handles_out,
                                   cohort_error* err) {
  return cohort_grouped_allreduce_async_on_device(count, names, sends, recvs, shapes, ndims, dtype,
                                                  options, nullptr, handles_out, err);
}

int cohort_grouped_allreduce_async_on_device(int count, const char* const* names,
                                             const void* const* sends, void* const* recvs,
                                             const int64_t* const* shapes, const int* ndims,
                                             int dtype, const cohort_allreduce_options* options,
                                             const cohort_device* device, int64_t* handles_out,
                                             cohort_error* err) {
  if (count > 0 && handles_out == nullptr) {
    return BadArgument("grouped allreduce: null handles_out", err);
  }
  if (count < 0 || (count > 0 && (names == nullptr || sends == nullptr || recvs == nullptr ||
                                  shapes == nullptr || ndims == nullptr))) {
    return BadArgument("grouped allreduce: null arrays or negative count", err);
  }
  std::vector<std::string> name_list;
  std::vector<cohort::Shape> shape_list;
  for (int i = 0; i < count; ++i) {
    if (BadTensor(names[i], shapes[i], ndims[i])) {
      return BadArgument(
          "grouped allreduce: tensor " + std::to_string(i) + " has a null name or a bad shape",
          err);
    }
    name_list.emplace_back(names[i]);
    shape_list.push_back(ToShape(shapes[i], ndims[i]));
  }
  cohort::Result<std::vector<cohort::Handle>> handles = cohort::GroupedAllreduceAsync(
      name_list, std::vector<const void*>(sends, sends + count),
      std::vector<void*>(recvs, recvs + count), shape_list, static_cast<DataType>(dtype),
      ToOptions(options), ToDevice(device));
  if (!handles.ok()) return Report(handles.status(), err);
  std::copy(handles->begin(), handles->end(), handles_out);
  return COHORT_OK;
}

int cohort_broadcast_async(const char* name, void* buf, const int64_t* shape, int ndim, int dtype,
                           int root, int process_set, int64_t* handle_out, cohort_error* err) {
  return cohort_broadcast_async_on_device(name, buf, shape, ndim, dtype, root, process_set, nullptr,
                                          handle_out, err);
}

int cohort_broadcast_async_on_device(const char* name, void* buf, const int64_t* shape, int ndim,
                                     int dtype, int root, int process_set,
                                     const cohort_device* device, int64_t* handle_out,
                                     cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("broadcast: null handle_out", err);
  if (BadTensor(name, shape, ndim)) return BadArgument("broadcast: null name or bad shape", err);
  return ReportValue(
      cohort::BroadcastAsync(name, buf, ToShape(shape, ndim), static_cast<DataType>(dtype), root,
                             nullptr, process_set, ToDevice(device)),
      handle_out, err);
}

int cohort_allgather_async(const char* name, const void* send, const int64_t* shape, int ndim,
                           int dtype, int process_set, int64_t* handle_out, cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("allgather: null handle_out", err);
  if (BadTensor(name, shape, ndim)) return BadArgument("allgather: null name or bad shape", err);
  return ReportValue(cohort::AllgatherAsync(name, send, ToShape(shape, ndim),
                                            static_cast<DataType>(dtype), nullptr, process_set),
                     handle_out, err);
}

int cohort_reducescatter_async(const char* name, const void* send, const int64_t* shape, int ndim,
                               int dtype, int op, const int64_t* recv_rows, int num_recv_rows,
                               int process_set, double prescale, double postscale,
                               int64_t* handle_out, cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("reducescatter: null handle_out", err);
  if (BadTensor(name, shape, ndim) || (num_recv_rows > 0 && recv_rows == nullptr)) {
    return BadArgument("reducescatter: null name, bad shape or null recv_rows", err);
  }
  return ReportValue(
      cohort::ReduceScatterAsync(name, send, ToShape(shape, ndim), static_cast<DataType>(dtype),
                                 static_cast<ReduceOp>(op), ToVector(recv_rows, num_recv_rows),
                                 nullptr, process_set, prescale, postscale),
      handle_out, err);
}

int cohort_allgather_into_async(const char* name, const void* send, const int64_t* shape, int ndim,
                                int dtype, void* recv, uint64_t recv_elements, int process_set,
                                int64_t* handle_out, cohort_error* err) {
  return cohort_allgather_into_async_on_device(name, send, shape, ndim, dtype, recv, recv_elements,
                                               process_set, nullptr, handle_out, err);
}

int cohort_allgather_into_async_on_device(const char* name, const void* send, const int64_t* shape,
                                          int ndim, int dtype, void* recv, uint64_t recv_elements,
                                          int process_set, const cohort_device* device,
                                          int64_t* handle_out, cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("allgather: null handle_out", err);
  if (BadTensor(name, shape, ndim)) return BadArgument("allgather: null name or bad shape", err);
  return ReportValue(cohort::AllgatherIntoAsync(name, send, recv, recv_elements,
                                                ToShape(shape, ndim), static_cast<DataType>(dtype),
                                                nullptr, process_set, ToDevice(device)),
                     handle_out, err);
}

int cohort_reducescatter_into_async(const char* name, const void* send, const int64_t* shape,
                                    int ndim, int dtype, int op, const int64_t* recv_rows,
                                    int num_recv_rows, int process_set, double prescale,
                                    double postscale, void* recv, uint64_t recv_elements,
                                    int64_t* handle_out, cohort_error* err) {
  return cohort_reducescatter_into_async_on_device(name, send, shape, ndim, dtype, op, recv_rows,
                                                   num_recv_rows, process_set, prescale, postscale,
                                                   recv, recv_elements, nullptr, handle_out, err);
}

int cohort_reducescatter_into_async_on_device(const char* name, const void* send,
                                              const int64_t* shape, int ndim, int dtype, int op,
                                              const int64_t* recv_rows, int num_recv_rows,
                                              int process_set, double prescale, double postscale,
                                              void* recv, uint64_t recv_elements,
                                              const cohort_device* device, int64_t* handle_out,
                                              cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("reducescatter: null handle_out", err);
  if (BadTensor(name, shape, ndim) || (num_recv_rows > 0 && recv_rows == nullptr)) {
    return BadArgument("reducescatter: null name, bad shape or null recv_rows", err);
  }
  return ReportValue(
      cohort::ReduceScatterIntoAsync(name, send, recv, recv_elements, ToShape(shape, ndim),
                                     static_cast<DataType>(dtype), static_cast<ReduceOp>(op),
                                     ToVector(recv_rows, num_recv_rows), nullptr, process_set,
                                     prescale, postscale, ToDevice(device)),
      handle_out, err);
}

int cohort_alltoall_async(const char* name, const void* send, const int64_t* shape, int ndim,
                          int dtype, const int64_t* splits, int num_splits, int process_set,
                          int64_t* handle_out, cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("alltoall: null handle_out", err);
  if (BadTensor(name, shape, ndim) || (num_splits > 0 && splits == nullptr)) {
    return BadArgument("alltoall: null name, bad shape or null splits", err);
  }
  return ReportValue(
      cohort::AlltoallAsync(name, send, ToShape(shape, ndim), static_cast<DataType>(dtype),
                            ToVector(splits, num_splits), nullptr, process_set),
      handle_out, err);
}

int cohort_barrier_async(const char* name, int process_set, int64_t* handle_out,
                         cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("barrier: null handle_out", err);
  if (name == nullptr) return BadArgument("barrier: null name", err);
  return ReportValue(cohort::BarrierAsync(name, nullptr, process_set), handle_out, err);
}

int cohort_join_async(int64_t* handle_out, cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("join: null handle_out", err);
  return ReportValue(cohort::JoinAsync(), handle_out, err);
}

int cohort_poll(int64_t handle, int* done_out, cohort_error* err) {
  if (done_out == nullptr) return BadArgument("poll: null done_out", err);
  return ReportValue(cohort::Poll(handle), done_out, err);
}

int cohort_wait_interruptible(int64_t handle, double timeout_seconds, int (*interrupted)(void* ctx),
                              void* ctx, cohort_error* err) {
  if (interrupted == nullptr)
    return BadArgument("cohort_wait_interruptible: interrupted is NULL", err);
  return Report(
      cohort::WaitInterruptible(handle, timeout_seconds, [&] { return interrupted(ctx) != 0; }),
      err);
}

int cohort_wait(int64_t handle, double timeout_seconds, cohort_error* err) {
  return Report(cohort::Wait(handle, timeout_seconds), err);
}

int cohort_synchronize_on_stream(int64_t handle, void* stream, double timeout_seconds,
                                 cohort_error* err) {
  return Report(cohort::SynchronizeOnStream(handle, stream, timeout_seconds), err);
}

int cohort_cuda_built(void) { return cohort::CudaBuilt() ? 1 : 0; }
int cohort_nccl_built(void) { return cohort::NcclBuilt(); }

int cohort_gpu_report(char* out, int capacity, cohort_error* err) {
  if (out == nullptr || capacity <= 0) return BadArgument("gpu report: no room to write", err);
  const std::string report = cohort::GpuReport();
  if (report.size() >= static_cast<size_t>(capacity)) {
    return BadArgument("gpu report: needs " + std::to_string(report.size() + 1) + " bytes, got " +
                           std::to_string(capacity),
                       err);
  }
  std::memcpy(out, report.c_str(), report.size() + 1);
  return COHORT_OK;
}

int cohort_take_result(int64_t handle, cohort_result** result_out, cohort_error* err) {
  if (result_out == nullptr) return BadArgument("take result: null result_out", err);
  auto result = std::make_unique<cohort_result>();
  cohort::Status s = cohort::TakeResult(handle, &result->value);
  if (!s.ok()) return Report(s, err);
  *result_out = result.release();
  return COHORT_OK;
}

const void* cohort_result_data(const cohort_result* r) { return r->value.data.data(); }
uint64_t cohort_result_bytes(const cohort_result* r) { return r->value.data.size(); }
int cohort_result_ndim(const cohort_result* r) { return static_cast<int>(r->value.shape.size()); }
const int64_t* cohort_result_shape(const cohort_result* r) { return r->value.shape.data(); }
int cohort_result_num_splits(const cohort_result* r) {
  return static_cast<int>(r->value.received_splits.size());
}
const int64_t* cohort_result_splits(const cohort_result* r) {
  return r->value.received_splits.data();
}
int64_t cohort_result_last_joined_rank(const cohort_result* r) { return r->value.last_joined_rank; }
void cohort_result_free(cohort_result* r) { delete r; }

void cohort_release(int64_t handle) { cohort::Release(handle); }

int cohort_start_timeline(const char* path, cohort_error* err) {
  if (path == nullptr) return BadArgument("start timeline: null path", err);
  return Report(cohort::StartTimeline(path), err);
}

int cohort_start_timeline_marking_cycles(const char* path, int mark_cycles, cohort_error* err) {
  if (path == nullptr) return BadArgument("start timeline: null path", err);
  return Report(cohort::StartTimeline(path, mark_cycles != 0), err);
}

int cohort_stop_timeline(cohort_error* err) { return Report(cohort::StopTimeline(), err); }

void cohort_get_engine_stats(cohort_engine_stats* out) {
  if (out == nullptr) return;
  const cohort::EngineStats s = cohort::GetEngineStats();
  *out = {s.cycles,           s.allreduces,    s.allreduced_tensors,
          s.fused_allreduces, s.fused_tensors, s.fused_bytes};
}

int cohort_p2p_open(cohort_error* err) { return Report(cohort::OpenPointToPoint(), err); }

int cohort_send_async(int dst, int64_t channel, int64_t tag, const void* data, uint64_t bytes,
                      double timeout_seconds, int64_t* handle_out, cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("send: null handle_out", err);
  return ReportValue(cohort::SendAsync(dst, channel, tag, data, bytes, timeout_seconds), handle_out,
                     err);
}

int cohort_recv_async(int src, int64_t channel, int64_t tag, void* data, uint64_t bytes,
                      double timeout_seconds, int* source_out, int64_t* handle_out,
                      cohort_error* err) {
  if (handle_out == nullptr) return BadArgument("recv: null handle_out", err);
  return ReportValue(cohort::RecvAsync(src, channel, tag, data, bytes, source_out, timeout_seconds),
                     handle_out, err);
}

int cohort_peer_host(int rank, char* host_out, int capacity, cohort_error* err) {
  if (host_out == nullptr || capacity <= 0) return BadArgument("peer host: no output buffer", err);
  cohort::Result<std::string> host = cohort::PeerHost(rank);
  if (!host.ok()) return Report(host.status(), err);
  if (host->size() >= static_cast<size_t>(capacity)) {
    return BadArgument(
        "peer host: '" + *host + "' does not fit in " + std::to_string(capacity) + " bytes", err);
  }
  std::memcpy(host_out, host->c_str(), host->size() + 1);
  return COHORT_OK;
}

}  // extern "C"
