// Crop boxes and CHW conversion for the image pipeline (resampling: resample.cc).
#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cohort::data {

Box RandomResizedCropBox(int width, int height, const ImageOptions& o, ShuffleRng* rng) {
  const double area = double(width) * height;
  const double log_lo = std::log(o.ratio_min), log_hi = std::log(o.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng->Uniform(o.scale_min, o.scale_max);
    const double ratio = std::exp(rng->Uniform(log_lo, log_hi));
    const int w = int(std::lround(std::sqrt(target * ratio)));
    const int h = int(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int y = int(rng->Below(uint64_t(height - h + 1)));
      const int x = int(rng->Below(uint64_t(width - w + 1)));
      return {x, y, w, h};
    }
  }
  const double in_ratio = double(width) / height;
  int w = width, h = height;
  if (in_ratio < o.ratio_min) {
    h = int(std::lround(w / o.ratio_min));
  } else if (in_ratio > o.ratio_max) {
    w = int(std::lround(h * o.ratio_max));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

Box CenterCropBox(int width, int height, double fraction) {
  const int side = std::max(1, int(std::lround(std::min(width, height) * fraction)));
  return {(width - side) / 2, (height - side) / 2, side, side};
}

void WriteChwFloat(const Image& image, bool flip, const std::array<float, 3>& mean,
                   const std::array<float, 3>& std, float* out) {
  const size_t plane = size_t(image.width) * image.height;
  for (int ch = 0; ch < 3; ++ch) {
    const float scale = 1.0f / (255.0f * std[ch]);
    const float shift = mean[ch] / std[ch];
    float* dst = out + ch * plane;
    for (int y = 0; y < image.height; ++y) {
      const uint8_t* row = image.row(y);
      float* d = dst + size_t(y) * image.width;
      for (int x = 0; x < image.width; ++x) {
        const int sx = flip ? image.width - 1 - x : x;
        d[x] = row[size_t(sx) * 3 + ch] * scale - shift;
      }
    }
  }
}

void WriteChwUint8(const Image& image, bool flip, uint8_t* out) {
  const size_t plane = size_t(image.width) * image.height;
  for (int ch = 0; ch < 3; ++ch) {
    for (int y = 0; y < image.height; ++y) {
      const uint8_t* row = image.row(y);
      uint8_t* d = out + ch * plane + size_t(y) * image.width;
      for (int x = 0; x < image.width; ++x)
        d[x] = row[size_t(flip ? image.width - 1 - x : x) * 3 + ch];
    }
  }
}

}  // namespace cohort::data
