// Fusion buffer storage.
#include "engine/fusion_buffer.h"

namespace cohort {

unsigned char* FusionBuffer::Reserve(size_t bytes) {
  if (storage_.size() < bytes) storage_.resize(bytes);
  return storage_.data();
}

}  // namespace cohort
