// The alltoall executor: each rank's rows per destination were exchanged
// during negotiation, so every rank knows what it receives.
#include "engine/engine.h"

#include "collectives/collectives.h"

namespace cohort {

Status Engine::ExecuteAlltoall(ProcessSet& set, const Request& r, const Response& response) {
  Communicator& comm = *set.comm;
  const Announcement& a = r.what;
  const int n = comm.size(), me = comm.rank();
  const uint64_t row = a.row_elements();
  std::vector<size_t> send_counts(n), recv_counts(n);
  TensorResult result;
  int64_t rows = 0;
  for (int p = 0; p < n; ++p) {
    send_counts[p] = static_cast<size_t>(a.splits[p]) * row;
    const int64_t from_p = response.splits_by_rank[p][me];
    recv_counts[p] = static_cast<size_t>(from_p) * row;
    result.received_splits.push_back(from_p);
    rows += from_p;
  }
  result.data.resize(static_cast<size_t>(rows) * row * DataTypeSize(a.dtype));
  result.shape = a.shape;
  result.shape[0] = rows;
  const Clock::time_point start = Clock::now();
  Status s = RunAlltoall(comm, r.send, send_counts.data(), result.data.data(), recv_counts.data(),
                         a.dtype);
  if (tl_) tl_->Span(a.name, "ALLTOALL", start, Clock::now());
  handles_.Complete(r.handle, s, std::move(result));
  return s;
}

}  // namespace cohort
