// BatchBuilder: turns the values of one column, sample after sample, into
// one contiguous tensor [B, ...]. Arrays are copied once; labels become
// int64 [B]; JPEG and PNG images are decoded (JPEGs only over the crop's
// region), cropped, resized, flipped and written as CHW float or uint8. Random choices come
// from a ShuffleRng keyed by (seed, epoch, position, column), so a sample's
// transform is the same whichever thread builds it.
#ifndef COHORT_DATA_LOADER_BATCH_H_
#define COHORT_DATA_LOADER_BATCH_H_

#include <string>

#include "cohort/data.h"
#include "cohort/loader.h"
#include "data/loader_buffers.h"
#include "data/loader_record.h"

namespace cohort::data {

class ColumnBatcher {
 public:
  ColumnBatcher(const Column& column, const ImageOptions& image, uint64_t batch_size,
                BufferPool* buffers)
      : column_(column), image_(image), batch_size_(batch_size), buffers_(buffers) {}

  // Row `row` of the batch from `value`; `key` seeds the row's random transform.
  Status Add(uint64_t row, const ValueView& value, uint64_t key);
  Tensor Finish() { return std::move(tensor_); }

 private:
  Status Allocate(DataType dtype, std::vector<uint64_t> row_shape);
  Status AddArray(uint64_t row, const ValueView& value, DataType dtype);
  Status AddImage(uint64_t row, const ValueView& value, uint64_t key);
  Status AddResizedImage(uint64_t row, const ValueView& value, uint64_t key);
  // Allocates the batch for 3 x height x width images, or checks it fits one.
  Status AllocateImageRow(int width, int height);

  const Column& column_;
  const ImageOptions& image_;
  uint64_t batch_size_;
  BufferPool* buffers_;
  std::vector<uint64_t> row_shape_;
  uint64_t row_bytes_ = 0;
  Tensor tensor_;
  // Reused from sample to sample: the decoded crop and the resize's planes.
  Image decoded_;
  std::vector<uint8_t> scratch_;
};

// Columns that can be batched: arrays, labels and images; text and JSON
// cannot (their rows differ in length). The error names the column.
Status CheckBatchable(const Column& column);

}  // namespace cohort::data

#endif  // COHORT_DATA_LOADER_BATCH_H_
