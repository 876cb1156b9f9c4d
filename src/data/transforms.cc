// Crop boxes, resampling and CHW conversion for the image pipeline.
#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace cohort::data {

namespace {

// PIL's fixed point: coefficients scaled by 2^22, sums start at one half.
constexpr int kPrecisionBits = 32 - 8 - 2;

// One output coordinate's taps into the source: [first, first + weights.size()).
struct Taps {
  int first = 0;
  std::vector<int32_t> weights;
};

// PIL's precompute_coeffs + normalize_coeffs_8bpc for the bilinear
// (triangle) filter, widened by the scale when shrinking so every source
// pixel contributes (antialiasing). Same arithmetic, so the same pixels.
std::vector<Taps> BilinearTaps(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;
  std::vector<Taps> taps(out_size);
  std::vector<double> w;
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(int(center - support + 0.5), 0);
    const int hi = std::min(int(center + support + 0.5), in_size);
    w.clear();
    double total = 0;
    for (int x = lo; x < hi; ++x) {
      const double d = std::fabs((x - center + 0.5) / filter_scale);
      w.push_back(d < 1 ? 1 - d : 0);
      total += w.back();
    }
    Taps& t = taps[o];
    t.first = lo;
    for (double v : w) {
      const double k = (total != 0 ? v / total : v) * (1 << kPrecisionBits);
      t.weights.push_back(int32_t(k < 0 ? k - 0.5 : k + 0.5));
    }
  }
  return taps;
}

uint8_t Clip8(int32_t sum) {
  const int32_t v = sum >> kPrecisionBits;
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

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
      const uint8_t* p = in + size_t(t.first) * c;
      const size_t n = t.weights.size();
      if (c == 3) {
        int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
        for (size_t k = 0; k < n; ++k, p += 3) {
          s0 += p[0] * t.weights[k];
          s1 += p[1] * t.weights[k];
          s2 += p[2] * t.weights[k];
        }
        out[size_t(o) * 3] = Clip8(s0);
        out[size_t(o) * 3 + 1] = Clip8(s1);
        out[size_t(o) * 3 + 2] = Clip8(s2);
        continue;
      }
      for (int ch = 0; ch < c; ++ch) {
        int32_t sum = 1 << (kPrecisionBits - 1);
        for (size_t k = 0; k < n; ++k) sum += p[k * c + ch] * t.weights[k];
        out[size_t(o) * c + ch] = Clip8(sum);
      }
    }
  }
  Image dst;
  dst.width = out_width;
  dst.height = out_height;
  dst.channels = c;
  dst.pixels.resize(size_t(out_width) * out_height * c);
  const size_t row_len = size_t(out_width) * c;
  std::vector<int32_t> acc(row_len);
  for (int o = 0; o < out_height; ++o) {
    const Taps& t = ys[o];
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (size_t k = 0; k < t.weights.size(); ++k) {
      const uint8_t* in = mid.row(t.first - row_lo + int(k));
      const int32_t w = t.weights[k];
      for (size_t i = 0; i < row_len; ++i) acc[i] += in[i] * w;
    }
    uint8_t* out = dst.row(o);
    for (size_t i = 0; i < row_len; ++i) out[i] = Clip8(acc[i]);
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
