// OutputBuffer: where an allgather's or reduce-scatter's output goes. The
// caller's own buffer (Request::recv_elements >= 0) saves the engine-held
// result and the copy out of it, so a training step that reuses flat
// buffers allocates nothing per operation.
#ifndef COHORT_ENGINE_OUTPUT_BUFFER_H_
#define COHORT_ENGINE_OUTPUT_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cohort/status.h"
#include "cohort/types.h"
#include "engine/request.h"

namespace cohort {

// Rows rank r of a set of `size` receives in a reduce-scatter: the
// announced splits, else an even split (the first rows % size get one more).
std::vector<int64_t> ScatterRows(const Announcement& a, int size);

// OK when the caller gave no buffer or one of exactly `elements` elements;
// else the error naming both sizes and the rows per rank (where the
// expected size came from).
Status CheckOutputSize(const Request& request, size_t elements,
                       const std::vector<int64_t>& rows_per_rank);

class OutputBuffer {
 public:
  // An output of `elements` elements of `type` for `request`: the caller's
  // buffer when it has exactly that room, else `result`'s data (resized).
  // A caller's buffer of the wrong size is not written: the collective
  // still runs (into `result`) so that no other rank waits for this one,
  // and Check() then fails the operation on this rank.
  OutputBuffer(const Request& request, size_t elements, DataType type, TensorResult* result);

  void* data() const { return data_; }

  // OK, or the error naming both sizes and the rows per rank (where the
  // expected size came from) when the caller's buffer did not fit.
  Status Check(const std::vector<int64_t>& rows_per_rank) const;

 private:
  const Request& request_;
  const size_t elements_;
  void* data_;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_OUTPUT_BUFFER_H_
