// c_api.h over cohort.h: converts values at the boundary and reports errors
// through cohort_error. Enum values are passed through unchecked (DataType and
// ReduceOp have int as fixed underlying type, so any int is representable):
// the runtime validates them, and a bad one fails the collective on every
// rank instead of leaving the peers waiting for this one.
#include "cohort/c_api.h"

#include <cstring>
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

const size_t* AsSizes(const uint64_t* p) { return reinterpret_cast<const size_t*>(p); }

}  // namespace

extern "C" {

int cohort_init(cohort_error* err) { return Report(cohort::Init(), err); }
int cohort_shutdown(cohort_error* err) { return Report(cohort::Shutdown(), err); }
int cohort_is_initialized(void) { return cohort::IsInitialized() ? 1 : 0; }
int cohort_rank(void) { return cohort::Rank(); }
int cohort_size(void) { return cohort::Size(); }
int cohort_local_rank(void) { return cohort::LocalRank(); }
int cohort_local_size(void) { return cohort::LocalSize(); }
int cohort_cross_rank(void) { return cohort::CrossRank(); }
int cohort_cross_size(void) { return cohort::CrossSize(); }

int cohort_allreduce(const void* send, void* recv, uint64_t count, int dtype, int op,
                     double prescale, double postscale, cohort_error* err) {
  cohort::AllreduceOptions options{static_cast<ReduceOp>(op), prescale, postscale};
  return Report(cohort::Allreduce(send, recv, count, static_cast<DataType>(dtype), options), err);
}

int cohort_reducescatter(const void* send, void* recv, const uint64_t* recv_counts, int dtype,
                         int op, cohort_error* err) {
  return Report(cohort::ReduceScatter(send, recv, AsSizes(recv_counts),
                                      static_cast<DataType>(dtype), static_cast<ReduceOp>(op)),
                err);
}

int cohort_allgather_counts(uint64_t my_count, uint64_t* counts_out, cohort_error* err) {
  cohort::Result<std::vector<size_t>> counts = cohort::AllgatherCounts(my_count);
  if (!counts.ok()) return Report(counts.status(), err);
  std::memcpy(counts_out, counts->data(), counts->size() * sizeof(uint64_t));
  return COHORT_OK;
}

int cohort_allgather(const void* send, uint64_t send_count, void* recv,
                     const uint64_t* recv_counts, int dtype, cohort_error* err) {
  return Report(cohort::Allgather(send, send_count, recv, AsSizes(recv_counts),
                                  static_cast<DataType>(dtype)),
                err);
}

int cohort_broadcast(void* buf, uint64_t count, int dtype, int root, cohort_error* err) {
  return Report(cohort::Broadcast(buf, count, static_cast<DataType>(dtype), root), err);
}

int cohort_alltoall_counts(const uint64_t* send_counts, uint64_t* recv_counts_out,
                           cohort_error* err) {
  cohort::Result<std::vector<size_t>> counts = cohort::AlltoallCounts(AsSizes(send_counts));
  if (!counts.ok()) return Report(counts.status(), err);
  std::memcpy(recv_counts_out, counts->data(), counts->size() * sizeof(uint64_t));
  return COHORT_OK;
}

int cohort_alltoall(const void* send, const uint64_t* send_counts, void* recv,
                    const uint64_t* recv_counts, int dtype, cohort_error* err) {
  return Report(cohort::Alltoall(send, AsSizes(send_counts), recv, AsSizes(recv_counts),
                                 static_cast<DataType>(dtype)),
                err);
}

int cohort_barrier(cohort_error* err) { return Report(cohort::Barrier(), err); }

}  // extern "C"
