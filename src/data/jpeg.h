// JPEG decoding and encoding with libjpeg-turbo. Decoding can stop at a
// region: rows above it are skipped and columns outside it are not
// converted (jpeg_skip_scanlines / jpeg_crop_scanline), so a random crop
// costs only the part of the image it keeps.
#ifndef COHORT_DATA_JPEG_H_
#define COHORT_DATA_JPEG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/loader.h"  // Image, Box
#include "cohort/status.h"

namespace cohort::data {

// Width and height from the JPEG header; fails on anything that is not a JPEG.
Result<Box> JpegSize(std::string_view jpeg);

// Decodes to RGB. `region` (default: all) limits the work; the result covers
// at least the region and `*origin` says where the result's (0, 0) lies in
// the full image (libjpeg widens a crop to whole blocks). With `scale_denom`
// 2, 4 or 8 the image is decoded at that fraction of its size in the DCT
// domain (PIL's draft mode): `region` and `*origin` are then in the scaled
// image's pixels, of ceil(width / scale_denom) x ceil(height / scale_denom).
Result<Image> DecodeJpeg(std::string_view jpeg, const Box* region = nullptr, Box* origin = nullptr,
                         int scale_denom = 1);
// The same into `*out`, reusing its memory (a loader thread decodes a
// whole batch into one Image).
Status DecodeJpegInto(std::string_view jpeg, const Box* region, Box* origin, int scale_denom,
                      Image* out);

// Chroma subsampling of an encoded RGB JPEG (ignored for grayscale).
enum class JpegSubsampling { k444, k422, k420, k440 };

// Encodes RGB (channels 3) or grayscale (channels 1) pixels; quality 1..100.
Result<std::string> EncodeJpeg(const Image& image, int quality,
                               JpegSubsampling subsampling = JpegSubsampling::k420);

}  // namespace cohort::data

#endif  // COHORT_DATA_JPEG_H_
