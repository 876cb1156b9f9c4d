// The allgather executor: ranks contribute different numbers of rows.
#include "engine/engine.h"

#include "collectives/collectives.h"

namespace cohort {

Status Engine::ExecuteAllgather(ProcessSet& set, const Request& r, const Response& response) {
  Communicator& comm = *set.comm;
  const Announcement& a = r.what;
  const int n = comm.size();
  const uint64_t row = a.row_elements();
  std::vector<size_t> counts(n);
  int64_t rows = 0;
  for (int p = 0; p < n; ++p) {
    counts[p] = static_cast<size_t>(response.rows_per_rank[p]) * row;
    rows += response.rows_per_rank[p];
  }
  std::vector<unsigned char> out(static_cast<size_t>(rows) * row * DataTypeSize(a.dtype));
  const Clock::time_point start = Clock::now();
  Status s = RunAllgather(comm, r.send, counts[comm.rank()], out.data(), counts.data(), a.dtype);
  if (tl_) tl_->Span(a.name, "ALLGATHER", start, Clock::now());
  TensorResult result;
  result.data = std::move(out);
  result.shape = a.shape.empty() ? std::vector<int64_t>{rows} : a.shape;
  result.shape[0] = rows;
  handles_.Complete(r.handle, s, std::move(result));
  return s;
}

}  // namespace cohort
