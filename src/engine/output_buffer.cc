// OutputBuffer: the caller's buffer or the engine-held result.
#include "engine/output_buffer.h"

#include <string>

#include "engine/request_checks.h"

namespace cohort {

OutputBuffer::OutputBuffer(const Request& request, size_t elements, DataType type,
                           TensorResult* result)
    : request_(request), elements_(elements), data_(nullptr) {
  if (request.recv_elements >= 0 && static_cast<size_t>(request.recv_elements) == elements) {
    data_ = request.recv;
    return;
  }
  result->data.resize(elements * DataTypeSize(type));
  data_ = result->data.data();
}

std::vector<int64_t> ScatterRows(const Announcement& a, int size) {
  if (!a.splits.empty()) return a.splits;
  std::vector<int64_t> rows(size, a.shape[0] / size);
  for (int r = 0; r < a.shape[0] % size; ++r) ++rows[r];
  return rows;
}

Status CheckOutputSize(const Request& request, size_t elements,
                       const std::vector<int64_t>& rows_per_rank) {
  if (request.recv_elements < 0 || static_cast<size_t>(request.recv_elements) == elements) {
    return Status::OK();
  }
  std::string rows;
  for (int64_t n : rows_per_rank) {
    rows += ' ';
    rows += std::to_string(n);
  }
  return Status::InvalidArgument(DescribeRequest(request) + ": the output buffer holds " +
                                 std::to_string(request.recv_elements) +
                                 " elements but this rank's output has " +
                                 std::to_string(elements) + " (rows per rank:" + rows + ")");
}

Status OutputBuffer::Check(const std::vector<int64_t>& rows_per_rank) const {
  return CheckOutputSize(request_, elements_, rows_per_rank);
}

}  // namespace cohort
