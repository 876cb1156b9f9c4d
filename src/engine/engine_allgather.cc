// The allgather executor: ranks contribute different numbers of rows.
#include "engine/engine.h"

#include "collectives/collectives.h"
#include "engine/output_buffer.h"

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
  TensorResult result;
  const OutputBuffer out(r, static_cast<size_t>(rows) * row, a.dtype, &result);
  const Clock::time_point start = Clock::now();
  Status s = RunAllgather(comm, r.send, counts[comm.rank()], out.data(), counts.data(), a.dtype);
  if (tl_) tl_->Span(a.name, "ALLGATHER", start, Clock::now());
  result.shape = a.shape.empty() ? std::vector<int64_t>{rows} : a.shape;
  result.shape[0] = rows;
  handles_.Complete(r.handle, s.ok() ? out.Check(response.rows_per_rank) : s, std::move(result));
  return s;
}

}  // namespace cohort
