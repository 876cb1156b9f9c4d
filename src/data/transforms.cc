// Crop boxes, resampling and CHW conversion for the image pipeline.
#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace cohort::data {

namespace {

// One output coordinate's taps into the source: [first, first + weights.size()).
struct Taps {
  int first = 0;
  std::vector<float> weights;
};

// PIL's precompute_coeffs for the bilinear (triangle) filter, widened by the
// scale when shrinking so every source pixel contributes (antialiasing).
std::vector<Taps> BilinearTaps(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;
  std::vector<Taps> taps(out_size);
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(int(center - support + 0.5), 0);
    const int hi = std::min(int(center + support + 0.5), in_size);
    Taps& t = taps[o];
    t.first = lo;
    double total = 0;
    for (int x = lo; x < hi; ++x) {
      const double d = std::fabs((x - center + 0.5) / filter_scale);
      const double w = d < 1 ? 1 - d : 0;
      t.weights.push_back(float(w));
      total += w;
    }
    if (total > 0) {
      for (float& w : t.weights) w = float(w / total);
    }
  }
  return taps;
}

uint8_t Clamp8(float v) { return uint8_t(std::clamp(std::lround(v), 0l, 255l)); }

}  // namespace

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

Image ResizeRegion(const Image& src, const Box& box, int out_width, int out_height) {
  const int c = src.channels;
  const std::vector<Taps> xs = BilinearTaps(box.width, out_width);
  const std::vector<Taps> ys = BilinearTaps(box.height, out_height);
  // Horizontal pass over the rows the vertical pass will read.
  const int row_lo = ys.front().first;
  const int row_hi = ys.back().first + int(ys.back().weights.size());
  Image mid;
  mid.width = out_width;
  mid.height = row_hi - row_lo;
  mid.channels = c;
  mid.pixels.resize(size_t(mid.width) * mid.height * c);
  for (int y = row_lo; y < row_hi; ++y) {
    const uint8_t* in = src.row(box.y + y) + size_t(box.x) * c;
    uint8_t* out = mid.row(y - row_lo);
    for (int o = 0; o < out_width; ++o) {
      const Taps& t = xs[o];
      for (int ch = 0; ch < c; ++ch) {
        float acc = 0;
        const uint8_t* p = in + size_t(t.first) * c + ch;
        for (size_t k = 0; k < t.weights.size(); ++k) acc += t.weights[k] * p[k * c];
        out[size_t(o) * c + ch] = Clamp8(acc);
      }
    }
  }
  Image dst;
  dst.width = out_width;
  dst.height = out_height;
  dst.channels = c;
  dst.pixels.resize(size_t(out_width) * out_height * c);
  const size_t row_len = size_t(out_width) * c;
  std::vector<float> acc(row_len);
  for (int o = 0; o < out_height; ++o) {
    const Taps& t = ys[o];
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (size_t k = 0; k < t.weights.size(); ++k) {
      const uint8_t* in = mid.row(t.first - row_lo + int(k));
      const float w = t.weights[k];
      for (size_t i = 0; i < row_len; ++i) acc[i] += w * in[i];
    }
    uint8_t* out = dst.row(o);
    for (size_t i = 0; i < row_len; ++i) out[i] = Clamp8(acc[i]);
  }
  return dst;
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
