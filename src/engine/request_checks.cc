// The checks a request passes on its own rank before it is queued.
#include "engine/request_checks.h"

#include <string>

namespace cohort {

// Local checks of the rows-per-rank argument of reduce-scatter and alltoall.
Status CheckSplits(const Announcement& a, int size) {
  const bool alltoall = a.kind == RequestKind::kAlltoall;
  if (!alltoall && a.kind != RequestKind::kReduceScatter) return Status::OK();
  if (a.shape.empty()) return Status::InvalidArgument("needs at least one dimension");
  if (a.splits.empty() && !alltoall) return Status::OK();  // even split
  if (static_cast<int>(a.splits.size()) != size) {
    return Status::InvalidArgument("has " + std::to_string(a.splits.size()) + " splits for " +
                                   std::to_string(size) + " ranks");
  }
  int64_t sum = 0;
  for (int64_t rows : a.splits) {
    if (rows < 0) return Status::InvalidArgument("has a negative split");
    sum += rows;
  }
  if (sum != a.shape[0]) {
    return Status::InvalidArgument("splits add up to " + std::to_string(sum) +
                                   " rows but the first dimension is " +
                                   std::to_string(a.shape[0]));
  }
  return Status::OK();
}

std::string DescribeRequest(const Request& request) {
  const Announcement& a = request.what;
  std::string what = std::string(RequestKindName(a.kind)) + " of tensor '" + a.name + "'";
  if (request.process_set != kGlobalProcessSet) {
    what += " in process set " + std::to_string(request.process_set);
  }
  return what;
}

Status CheckRequest(const Request& request) {
  const Announcement& a = request.what;
  if (a.name.empty()) return Status::InvalidArgument("every tensor operation needs a name");
  if (!IsValidDataType(static_cast<int>(a.dtype)) || !IsValidReduceOp(static_cast<int>(a.op)) ||
      a.compression < 0 || a.compression > 2) {
    return Status::InvalidArgument("invalid data type, reduce op or compression value");
  }
  if (a.op == ReduceOp::kAdasum &&
      (a.kind != RequestKind::kAllreduce || !IsFloatingPoint(a.dtype))) {
    return Status::InvalidArgument(
        std::string("op adasum is only for allreduce of floating-point tensors, got ") +
        DataTypeName(a.dtype));
  }
  for (int64_t d : a.shape) {
    if (d < 0) return Status::InvalidArgument("negative dimension in its shape");
  }
  const bool needs_send = a.kind == RequestKind::kAllreduce || a.kind == RequestKind::kAllgather ||
                          a.kind == RequestKind::kReduceScatter || a.kind == RequestKind::kAlltoall;
  const bool needs_recv = a.kind == RequestKind::kAllreduce || a.kind == RequestKind::kBroadcast;
  if (a.elements() > 0 &&
      ((needs_send && request.send == nullptr) || (needs_recv && request.recv == nullptr))) {
    return Status::InvalidArgument("null buffer for " + std::to_string(a.elements()) + " elements");
  }
  if (request.recv_elements > 0 && request.recv == nullptr) {
    return Status::InvalidArgument("null output buffer for " +
                                   std::to_string(request.recv_elements) + " elements");
  }
  const bool job_wide = a.kind == RequestKind::kJoin || a.kind == RequestKind::kAddProcessSet ||
                        a.kind == RequestKind::kRemoveProcessSet;
  if (job_wide && request.process_set != kGlobalProcessSet) {
    return Status::InvalidArgument("only runs over the whole job (process set 0)");
  }
  return Status::OK();
}

}  // namespace cohort
