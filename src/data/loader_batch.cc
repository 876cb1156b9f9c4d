// Per-column batch assembly and the per-sample image pipeline.
#include "data/loader_batch.h"

#include <cstring>

#include "data/image_decode.h"
#include "data/resample.h"
#include "data/transforms.h"

namespace cohort::data {

Status CheckBatchable(const Column& column) {
  if (column.kind == ColumnKind::kText || column.kind == ColumnKind::kJson) {
    return Status::InvalidArgument(
        "column '" + column.name + "' holds " + ColumnKindName(column.kind) +
        ", which cannot be batched; leave it out of the loader's columns");
  }
  return Status::OK();
}

Status ColumnBatcher::Allocate(DataType dtype, std::vector<uint64_t> row_shape) {
  row_bytes_ = DataTypeSize(dtype);
  for (uint64_t d : row_shape) row_bytes_ *= d;
  row_shape_ = std::move(row_shape);
  tensor_.dtype = dtype;
  tensor_.shape = {batch_size_};
  tensor_.shape.insert(tensor_.shape.end(), row_shape_.begin(), row_shape_.end());
  tensor_.nbytes = row_bytes_ * batch_size_;
  tensor_.storage = buffers_->Get(tensor_.nbytes);
  return Status::OK();
}

Status ColumnBatcher::Add(uint64_t row, const ValueView& value, uint64_t key) {
  switch (column_.kind) {
    case ColumnKind::kArray:
      return AddArray(row, value, column_.dtype);
    case ColumnKind::kLabel:
      return AddArray(row, value, DataType::kInt64);
    case ColumnKind::kImage:
      return AddImage(row, value, key);
    default:
      return CheckBatchable(column_);
  }
}

Status ColumnBatcher::AddArray(uint64_t row, const ValueView& value, DataType dtype) {
  if (!tensor_.storage) COHORT_RETURN_IF_ERROR(Allocate(dtype, value.shape));
  if (value.shape != row_shape_) {
    return Status::InvalidArgument("column '" + column_.name + "': a sample of shape " +
                                   ShapeName(value.shape) + " cannot join a batch of shape " +
                                   ShapeName(row_shape_) +
                                   " (arrays of different shapes are not batched)");
  }
  std::memcpy(tensor_.storage.get() + row * row_bytes_, value.bytes.data(), row_bytes_);
  return Status::OK();
}

Status ColumnBatcher::AddImage(uint64_t row, const ValueView& value, uint64_t key) {
  if (image_.size > 0) return AddResizedImage(row, value, key);
  Result<Image> decoded = DecodeImage(value.bytes);
  if (!decoded.ok()) return decoded.status().WithContext("column '" + column_.name + "'");
  COHORT_RETURN_IF_ERROR(AllocateImageRow(decoded->width, decoded->height));
  uint8_t* out = tensor_.storage.get() + row * row_bytes_;
  if (image_.to_float) {
    WriteChwFloat(*decoded, false, image_.mean, image_.std, reinterpret_cast<float*>(out));
  } else {
    WriteChwUint8(*decoded, false, out);
  }
  return Status::OK();
}

Status ColumnBatcher::AllocateImageRow(int width, int height) {
  const std::vector<uint64_t> shape = {3, uint64_t(height), uint64_t(width)};
  const DataType dtype = image_.to_float ? DataType::kFloat32 : DataType::kUInt8;
  if (!tensor_.storage) COHORT_RETURN_IF_ERROR(Allocate(dtype, shape));
  if (shape != row_shape_) {
    return Status::InvalidArgument("column '" + column_.name + "': an image of " +
                                   ShapeName(shape) + " cannot join a batch of " +
                                   ShapeName(row_shape_) +
                                   " (set the loader's image size to crop every image alike)");
  }
  return Status::OK();
}

// The crop is decoded (JPEG: only its region, at a reduced DCT scale where
// that still covers the output) and resized straight into the batch row.
Status ColumnBatcher::AddResizedImage(uint64_t row, const ValueView& value, uint64_t key) {
  ShuffleRng rng(key);
  Result<Box> size = ImageSize(value.bytes);
  if (!size.ok()) return size.status().WithContext("column '" + column_.name + "'");
  const Box crop = image_.random_crop
                       ? RandomResizedCropBox(size->width, size->height, image_, &rng)
                       : CenterCropBox(size->width, size->height, image_.center_fraction);
  ChwTarget target;
  target.flip = image_.random_crop && rng.Uniform() < image_.flip_probability;
  // Decode at 1/2, 1/4 or 1/8 scale when the crop still covers the output there.
  const int scale = image_.dct_scaling ? ReducedScale(value.bytes, crop, image_.size) : 1;
  const Box region = scale == 1 ? crop : ScaleBox(crop, scale, size->width, size->height);
  Box origin;
  const Status decoded = DecodeImageInto(value.bytes, &region, &origin, scale, &decoded_);
  if (!decoded.ok()) return decoded.WithContext("column '" + column_.name + "'");
  COHORT_RETURN_IF_ERROR(AllocateImageRow(image_.size, image_.size));
  uint8_t* out = tensor_.storage.get() + row * row_bytes_;
  if (image_.to_float) {
    target.floats = reinterpret_cast<float*>(out);
    target.mean = image_.mean;
    target.std = image_.std;
  } else {
    target.bytes = out;
  }
  const Box in_decoded{region.x - origin.x, region.y - origin.y, region.width, region.height};
  ResizeToChw(decoded_, in_decoded, image_.size, image_.size, target, &scratch_);
  return Status::OK();
}

}  // namespace cohort::data
