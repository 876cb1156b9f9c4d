// BenchBuffer: a zero-filled buffer for the `cohort bench` commands, in
// ordinary memory or in shared memory the ranks of a host map
// (cohort::AllocateSharedMemory, their --shared-memory flag).
#ifndef COHORT_CLI_BENCH_BUFFER_H_
#define COHORT_CLI_BENCH_BUFFER_H_

#include <cstddef>
#include <vector>

#include "cohort/cohort.h"

namespace cohort::cli {

class BenchBuffer {
 public:
  BenchBuffer() = default;
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;
  ~BenchBuffer() {
    if (shared_ != nullptr) FreeSharedMemory(shared_);
  }
  // Requires Init when `shared`.
  Status Allocate(size_t bytes, bool shared) {
    if (!shared) {
      plain_.assign(bytes, 0);
      return Status::OK();
    }
    return AllocateSharedMemory(bytes, &shared_);
  }
  unsigned char* data() {
    return shared_ != nullptr ? static_cast<unsigned char*>(shared_) : plain_.data();
  }

 private:
  std::vector<unsigned char> plain_;
  void* shared_ = nullptr;
};

}  // namespace cohort::cli

#endif  // COHORT_CLI_BENCH_BUFFER_H_
