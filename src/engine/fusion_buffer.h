// FusionBuffer: one reusable buffer into which small allreduce tensors of one
// response are packed, reduced as one message, and unpacked.
#ifndef COHORT_ENGINE_FUSION_BUFFER_H_
#define COHORT_ENGINE_FUSION_BUFFER_H_

#include <cstddef>
#include <vector>

#include "cohort/types.h"

namespace cohort {

class FusionBuffer {
 public:
  // Grows (never shrinks) to hold `bytes`; returns the start.
  unsigned char* Reserve(size_t bytes);

 private:
  std::vector<unsigned char> storage_;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_FUSION_BUFFER_H_
