// The reduce-scatter executor, with the pre- and post-scaling every path
// (C++, C ABI, Python, LibTorch) relies on.
#include "engine/engine.h"

#include "collectives/collectives.h"
#include "collectives/reduce_kernels.h"
#include "engine/output_buffer.h"

namespace cohort {

Status Engine::ExecuteReduceScatter(ProcessSet& set, const Request& r) {
  Communicator& comm = *set.comm;
  const Announcement& a = r.what;
  const int n = comm.size();
  const std::vector<int64_t> rows = ScatterRows(a, n);
  std::vector<size_t> counts(n);
  for (int p = 0; p < n; ++p) counts[p] = static_cast<size_t>(rows[p]) * a.row_elements();
  TensorResult result;
  const OutputBuffer out(r, counts[comm.rank()], a.dtype, &result);
  result.shape = a.shape;
  result.shape[0] = rows[comm.rank()];
  const Clock::time_point start = Clock::now();
  const void* send = r.send;
  std::vector<unsigned char> scaled;
  if (a.prescale != 1.0) {
    scaled.resize(a.elements() * DataTypeSize(a.dtype));
    ScaleCopy(scaled.data(), r.send, a.elements(), a.dtype, a.prescale);
    send = scaled.data();
  }
  Status s = RunReduceScatter(comm, send, out.data(), counts.data(), a.dtype, a.op);
  if (s.ok() && a.postscale != 1.0) {
    ScaleCopy(out.data(), out.data(), counts[comm.rank()], a.dtype, a.postscale);
  }
  if (tl_) tl_->Span(a.name, "REDUCESCATTER", start, Clock::now());
  handles_.Complete(r.handle, s.ok() ? out.Check(rows) : s, std::move(result));
  return s;
}

}  // namespace cohort
