// PIL's antialiased bilinear resize of an image region, written straight
// into a batch row as planes C x H x W (mirrored, as uint8 or as normalised
// float), with AVX2 kernels where the CPU has them. Integer arithmetic is
// PIL's, so the pixels equal Image.crop(box).resize(size, BILINEAR) with
// and without SIMD.
#ifndef COHORT_DATA_RESAMPLE_H_
#define COHORT_DATA_RESAMPLE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "cohort/loader.h"  // Image, Box

namespace cohort::data {

// Where ResizeToChw writes: `image.channels` planes of out_height x
// out_width. Exactly one of `floats` and `bytes` is set; floats are
// (x / 255 - mean[c]) / std[c].
struct ChwTarget {
  bool flip = false;  // mirror left-right
  float* floats = nullptr;
  uint8_t* bytes = nullptr;
  std::array<float, 3> mean = {0, 0, 0};
  std::array<float, 3> std = {1, 1, 1};
};

// Which kernels run: the best the CPU supports, or the portable C++ ones
// (tests compare the two).
enum class ResampleKernels { kBest, kPortable };

// Resizes the part `box` of `src` (1 to 3 channels; the box's edges act as
// the image's edges, as after a crop) to out_width x out_height into `target`.
// `scratch` (optional) holds the planes between the passes, so that a
// caller resizing many images allocates them once.
void ResizeToChw(const Image& src, const Box& box, int out_width, int out_height,
                 const ChwTarget& target, std::vector<uint8_t>* scratch = nullptr,
                 ResampleKernels kernels = ResampleKernels::kBest);

// Whether kBest uses SIMD kernels on this CPU (for the benchmark's notes).
bool ResampleHasSimd();

}  // namespace cohort::data

#endif  // COHORT_DATA_RESAMPLE_H_
