// Image transforms of the loader, deterministic from a ShuffleRng: the crop
// boxes of torchvision's RandomResizedCrop and of a center crop, and the
// write of a full-size image as a CHW batch row (optionally mirrored, as
// float normalised or as uint8). Resizing: data/resample.h.
#ifndef COHORT_DATA_TRANSFORMS_H_
#define COHORT_DATA_TRANSFORMS_H_

#include <array>

#include "cohort/loader.h"
#include "data/jpeg.h"
#include "data/shuffle_rng.h"

namespace cohort::data {

// torchvision.transforms.RandomResizedCrop.get_params: up to 10 draws of
// area (scale) and log-uniform aspect ratio, then the central fallback.
Box RandomResizedCropBox(int width, int height, const ImageOptions& options, ShuffleRng* rng);
// The central square of side `fraction` * min(width, height).
Box CenterCropBox(int width, int height, double fraction);

// ResizeRegion (PIL's antialiased bilinear resize) is declared in include/cohort/loader.h
// and defined in resample.cc.

// Writes `image` (3 channels) as planes C x H x W, mirrored left-right with `flip`.
void WriteChwFloat(const Image& image, bool flip, const std::array<float, 3>& mean,
                   const std::array<float, 3>& std, float* out);
void WriteChwUint8(const Image& image, bool flip, uint8_t* out);

}  // namespace cohort::data

#endif  // COHORT_DATA_TRANSFORMS_H_
