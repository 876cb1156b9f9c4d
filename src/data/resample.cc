// PIL's bilinear resampling in two passes: horizontal, from the interleaved
// source into one plane per channel (mirrored there, which the vertical pass
// does not see), then vertical, from those planes into the target. Both
// passes have a portable and an AVX2 kernel with the same integer sums.
#include "data/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define COHORT_RESAMPLE_AVX2 1
#endif

namespace cohort::data {

namespace {

// PIL's fixed point: coefficients scaled by 2^22, sums start at one half.
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

// Each output coordinate's taps into the source: count[o] weights from
// weights[o * stride] over source [first[o], first[o] + count[o]). The rest
// of the stride is zero, so a kernel may read `stride` taps (in pairs).
struct TapTable {
  int stride = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

// PIL's precompute_coeffs + normalize_coeffs_8bpc for the bilinear
// (triangle) filter, widened by the scale when shrinking so every source
// pixel contributes (antialiasing). Same arithmetic, so the same pixels.
TapTable BilinearTaps(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double support = std::max(scale, 1.0);  // the filter's support is 1, times the scale
  TapTable t;
  t.stride = (int(std::ceil(support)) * 2 + 2) & ~1;  // PIL's ksize, rounded up to pairs
  t.first.resize(out_size);
  t.count.resize(out_size);
  t.weights.assign(size_t(out_size) * t.stride, 0);
  std::vector<double> w(t.stride);
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(int(center - support + 0.5), 0);
    const int hi = std::min(int(center + support + 0.5), in_size);
    double total = 0;
    for (int x = lo; x < hi; ++x) {
      const double d = std::fabs((x - center + 0.5) / support);
      w[x - lo] = d < 1 ? 1 - d : 0;
      total += w[x - lo];
    }
    t.first[o] = lo;
    t.count[o] = hi - lo;
    for (int k = 0; k < hi - lo; ++k) {
      const double v = (total != 0 ? w[k] / total : w[k]) * (1 << kPrecisionBits);
      t.weights[size_t(o) * t.stride + k] = int32_t(v < 0 ? v - 0.5 : v + 0.5);
    }
  }
  return t;
}

uint8_t Clip8(int32_t sum) {
  const int32_t v = sum >> kPrecisionBits;
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

// What both passes share: the source region, the taps, and the planes
// between the passes (rows [row_lo, row_lo + rows) of the box, out_width wide).
struct Pass {
  const Image& src;
  const Box& box;
  int out_width, out_height;
  TapTable xs, ys;
  int row_lo, rows;
  uint8_t* planes;
  uint8_t* plane(int ch) const { return planes + size_t(ch) * rows * out_width; }
};

// Output pixel `o` of the horizontal pass over `row`, every channel, to
// offset `at` of the planes.
void HorizontalPixel(const Pass& p, const uint8_t* row, int o, size_t at) {
  const int c = p.src.channels;
  const uint8_t* in = row + size_t(p.xs.first[o]) * c;
  const int32_t* w = &p.xs.weights[size_t(o) * p.xs.stride];
  for (int ch = 0; ch < c; ++ch) {
    int32_t sum = kHalf;
    for (int k = 0; k < p.xs.count[o]; ++k) sum += in[k * c + ch] * w[k];
    p.plane(ch)[at] = Clip8(sum);
  }
}

const uint8_t* SourceRow(const Pass& p, int y) {
  return p.src.row(p.box.y + p.row_lo + y) + size_t(p.box.x) * p.src.channels;
}

void HorizontalPortable(const Pass& p, bool flip) {
  for (int y = 0; y < p.rows; ++y) {
    const size_t at = size_t(y) * p.out_width;
    for (int o = 0; o < p.out_width; ++o)
      HorizontalPixel(p, SourceRow(p, y), o, at + (flip ? p.out_width - 1 - o : o));
  }
}

// (x / 255 - mean) / std as x * scale - shift, the same float operations
// as WriteChwFloat.
struct Normalize {
  float scale = 0, shift = 0;
  Normalize(const ChwTarget& target, int ch) {
    if (target.floats == nullptr) return;
    scale = 1.0f / (255.0f * target.std[ch]);
    shift = target.mean[ch] / target.std[ch];
  }
};

// Plane `ch` rows -> the target's plane `ch`, PIL's vertical pass.
void VerticalPortable(const Pass& p, int ch, const ChwTarget& target) {
  const uint8_t* mid = p.plane(ch);
  const size_t plane = size_t(p.out_width) * p.out_height;
  const Normalize norm(target, ch);
  std::vector<int32_t> acc(p.out_width);
  for (int y = 0; y < p.out_height; ++y) {
    const int32_t* w = &p.ys.weights[size_t(y) * p.ys.stride];
    std::fill(acc.begin(), acc.end(), kHalf);
    for (int k = 0; k < p.ys.count[y]; ++k) {
      const uint8_t* in = mid + size_t(p.ys.first[y] - p.row_lo + k) * p.out_width;
      for (int x = 0; x < p.out_width; ++x) acc[x] += in[x] * w[k];
    }
    const size_t at = ch * plane + size_t(y) * p.out_width;
    for (int x = 0; x < p.out_width; ++x) {
      const uint8_t v = Clip8(acc[x]);
      if (target.floats != nullptr) {
        target.floats[at + x] = v * norm.scale - norm.shift;
      } else {
        target.bytes[at + x] = v;
      }
    }
  }
}

#ifdef COHORT_RESAMPLE_AVX2

// RGB only. Weights are spread per tap pair as w0 w0 w0 w0 w1 w1 w1 w1, so
// one multiply takes two source pixels whose bytes R G B sit in int32
// lanes 0-2 and 4-6 (one 16-byte load feeds two pairs). Reads `stride`
// taps and some bytes beyond (their weights are zero), so the outputs whose
// reads would pass the end of the buffer take the portable path.
std::vector<int32_t> SpreadPairs(const TapTable& t) {
  std::vector<int32_t> spread(t.weights.size() * 4);
  for (size_t i = 0; i < t.weights.size(); ++i) {
    int32_t* pair = &spread[(i / 2) * 8 + (i % 2) * 4];
    std::fill(pair, pair + 4, t.weights[i]);
  }
  return spread;
}

// The sums of one output pixel: lanes R G B x of both halves still to add.
template <int kStride>
__attribute__((target("avx2"), always_inline)) inline __m256i OutputSums(const uint8_t* in,
                                                                         const int32_t* w,
                                                                         int stride) {
  const __m256i low = _mm256_setr_epi8(0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, -1, -1, -1, -1,
                                       3, -1, -1, -1, 4, -1, -1, -1, 5, -1, -1, -1, -1, -1, -1, -1);
  const __m256i high =
      _mm256_setr_epi8(6, -1, -1, -1, 7, -1, -1, -1, 8, -1, -1, -1, -1, -1, -1, -1, 9, -1, -1, -1,
                       10, -1, -1, -1, 11, -1, -1, -1, -1, -1, -1, -1);
  const int n = kStride > 0 ? kStride : stride;
  __m256i acc = _mm256_setzero_si256();
  for (int k = 0; k < n; k += 4) {  // four taps: pixels k .. k + 3
    const __m256i bytes =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 3 * k)));
    const __m256i* pair = reinterpret_cast<const __m256i*>(w + 4 * k);
    acc = _mm256_add_epi32(
        acc, _mm256_mullo_epi32(_mm256_shuffle_epi8(bytes, low), _mm256_loadu_si256(pair)));
    if (k + 2 < n) {
      acc = _mm256_add_epi32(
          acc, _mm256_mullo_epi32(_mm256_shuffle_epi8(bytes, high), _mm256_loadu_si256(pair + 1)));
    }
  }
  return acc;
}

// Rows of the horizontal pass, four output pixels per step: their sums are
// folded, shifted, clipped to bytes and shuffled into the three planes
// (in reverse order when mirrored).
template <int kStride>
__attribute__((target("avx2"))) void HorizontalAvx2(const Pass& p, bool flip) {
  const int stride = p.xs.stride, width = p.out_width;
  const std::vector<int32_t> spread = SpreadPairs(p.xs);
  const uint8_t* end = p.src.pixels.data() + p.src.pixels.size();
  const __m256i half = _mm256_set1_epi32(kHalf);
  const __m128i planar = flip ? _mm_setr_epi8(12, 8, 4, 0, 13, 9, 5, 1, 14, 10, 6, 2, 15, 11, 7, 3)
                              : _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (int y = 0; y < p.rows; ++y) {
    const uint8_t* row = SourceRow(p, y);
    const size_t line = size_t(y) * width;
    // Outputs [0, safe) read only inside the buffer; `first` never decreases.
    int safe = width;
    const size_t left = size_t(end - row);
    while (safe > 0 && 3 * (size_t(p.xs.first[safe - 1]) + stride) + 16 > left) --safe;
    int o = 0;
    for (; o + 4 <= safe; o += 4) {
      __m256i sums[4];
      for (int i = 0; i < 4; ++i) {
        sums[i] = OutputSums<kStride>(row + 3 * size_t(p.xs.first[o + i]),
                                      &spread[size_t(o + i) * stride * 4], stride);
      }
      // [a RGBx | b RGBx] and [c RGBx | d RGBx], rounded and shifted.
      __m256i ab = _mm256_add_epi32(_mm256_permute2x128_si256(sums[0], sums[1], 0x20),
                                    _mm256_permute2x128_si256(sums[0], sums[1], 0x31));
      __m256i cd = _mm256_add_epi32(_mm256_permute2x128_si256(sums[2], sums[3], 0x20),
                                    _mm256_permute2x128_si256(sums[2], sums[3], 0x31));
      ab = _mm256_srai_epi32(_mm256_add_epi32(ab, half), kPrecisionBits);
      cd = _mm256_srai_epi32(_mm256_add_epi32(cd, half), kPrecisionBits);
      const __m256i words = _mm256_packs_epi32(ab, cd);  // [a c | b d] as int16
      const __m256i bytes = _mm256_packus_epi16(words, words);
      const __m128i abcd =
          _mm_unpacklo_epi32(_mm256_castsi256_si128(bytes), _mm256_extracti128_si256(bytes, 1));
      const __m128i rgb = _mm_shuffle_epi8(abcd, planar);
      const size_t at = line + (flip ? width - 4 - o : o);
      const int r = _mm_cvtsi128_si32(rgb), g = _mm_extract_epi32(rgb, 1),
                b = _mm_extract_epi32(rgb, 2);
      std::memcpy(p.plane(0) + at, &r, 4);
      std::memcpy(p.plane(1) + at, &g, 4);
      std::memcpy(p.plane(2) + at, &b, 4);
    }
    for (; o < width; ++o) HorizontalPixel(p, row, o, line + (flip ? width - 1 - o : o));
  }
}

void HorizontalAvx2(const Pass& p, bool flip) {
  switch (p.xs.stride) {  // 4: enlarging; 6: shrinking up to 2x; 8: up to 3x
    case 4:
      return HorizontalAvx2<4>(p, flip);
    case 6:
      return HorizontalAvx2<6>(p, flip);
    case 8:
      return HorizontalAvx2<8>(p, flip);
    default:
      return HorizontalAvx2<0>(p, flip);
  }
}

// Output pixels [x, x + 8 * kVectors) of one row of plane `ch`: the taps'
// weighted sums of `rows` (the first tap's row), shifted, clipped and
// stored at `floats` or `bytes` (the output row's start).
template <int kVectors>
__attribute__((target("avx2"), always_inline)) inline void VerticalStep(
    const uint8_t* rows, int width, int x, int taps, const int32_t* w, const Normalize& norm,
    float* floats, uint8_t* bytes) {
  __m256i acc[kVectors];
  for (int v = 0; v < kVectors; ++v) acc[v] = _mm256_set1_epi32(kHalf);
  for (int k = 0; k < taps; ++k) {
    const __m256i weight = _mm256_set1_epi32(w[k]);
    const uint8_t* in = rows + size_t(k) * width + x;
    for (int v = 0; v < kVectors; ++v) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + 8 * v));
      acc[v] = _mm256_add_epi32(acc[v], _mm256_mullo_epi32(_mm256_cvtepu8_epi32(b), weight));
    }
  }
  const __m256i zero = _mm256_setzero_si256(), max = _mm256_set1_epi32(255);
  for (int v = 0; v < kVectors; ++v) {
    const __m256i clipped =
        _mm256_min_epi32(_mm256_max_epi32(_mm256_srai_epi32(acc[v], kPrecisionBits), zero), max);
    if (floats != nullptr) {
      const __m256 value = _mm256_cvtepi32_ps(clipped);
      _mm256_storeu_ps(floats + x + 8 * v,
                       _mm256_sub_ps(_mm256_mul_ps(value, _mm256_set1_ps(norm.scale)),
                                     _mm256_set1_ps(norm.shift)));
    } else {
      const __m128i words =
          _mm_packs_epi32(_mm256_castsi256_si128(clipped), _mm256_extracti128_si256(clipped, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(bytes + x + 8 * v),
                       _mm_packus_epi16(words, words));
    }
  }
}

// 32 output pixels of a row per step (one weight broadcast per tap feeds
// four vectors), then 8; a tail that is not a multiple of eight takes the
// portable arithmetic.
__attribute__((target("avx2"))) void VerticalAvx2(const Pass& p, int ch, const ChwTarget& target) {
  const uint8_t* mid = p.plane(ch);
  const size_t plane = size_t(p.out_width) * p.out_height;
  const Normalize norm(target, ch);
  const int width = p.out_width;
  for (int y = 0; y < p.out_height; ++y) {
    const int32_t* w = &p.ys.weights[size_t(y) * p.ys.stride];
    const uint8_t* rows = mid + size_t(p.ys.first[y] - p.row_lo) * width;
    const int taps = p.ys.count[y];
    const size_t at = ch * plane + size_t(y) * width;
    float* floats = target.floats != nullptr ? target.floats + at : nullptr;
    uint8_t* bytes = target.bytes != nullptr ? target.bytes + at : nullptr;
    int x = 0;
    for (; x + 32 <= width; x += 32) VerticalStep<4>(rows, width, x, taps, w, norm, floats, bytes);
    for (; x + 8 <= width; x += 8) VerticalStep<1>(rows, width, x, taps, w, norm, floats, bytes);
    for (; x < width; ++x) {
      int32_t sum = kHalf;
      for (int k = 0; k < taps; ++k) sum += rows[size_t(k) * width + x] * w[k];
      const uint8_t v = Clip8(sum);
      if (floats != nullptr) {
        floats[x] = v * norm.scale - norm.shift;
      } else {
        bytes[x] = v;
      }
    }
  }
}

#endif  // COHORT_RESAMPLE_AVX2

}  // namespace

bool ResampleHasSimd() {
#ifdef COHORT_RESAMPLE_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

void ResizeToChw(const Image& src, const Box& box, int out_width, int out_height,
                 const ChwTarget& target, std::vector<uint8_t>* scratch, ResampleKernels kernels) {
  Pass p{src,
         box,
         out_width,
         out_height,
         BilinearTaps(box.width, out_width),
         BilinearTaps(box.height, out_height),
         0,
         0,
         nullptr};
  p.row_lo = p.ys.first.front();
  p.rows = p.ys.first.back() + p.ys.count.back() - p.row_lo;
  std::vector<uint8_t> own;
  if (scratch == nullptr) scratch = &own;
  const size_t planes = size_t(src.channels) * p.rows * out_width;
  if (scratch->size() < planes) scratch->resize(planes);
  p.planes = scratch->data();
  const bool simd = kernels == ResampleKernels::kBest && ResampleHasSimd();
#ifdef COHORT_RESAMPLE_AVX2
  if (simd && src.channels == 3) {
    HorizontalAvx2(p, target.flip);
  } else {
    HorizontalPortable(p, target.flip);
  }
  for (int ch = 0; ch < src.channels; ++ch) {
    if (simd) {
      VerticalAvx2(p, ch, target);
    } else {
      VerticalPortable(p, ch, target);
    }
  }
#else
  (void)simd;
  HorizontalPortable(p, target.flip);
  for (int ch = 0; ch < src.channels; ++ch) VerticalPortable(p, ch, target);
#endif
}

Image ResizeRegion(const Image& src, const Box& box, int out_width, int out_height) {
  const int c = src.channels;
  const size_t plane = size_t(out_width) * out_height;
  std::vector<uint8_t> planes(plane * c);
  ChwTarget target;
  target.bytes = planes.data();
  ResizeToChw(src, box, out_width, out_height, target);
  Image dst;
  dst.width = out_width;
  dst.height = out_height;
  dst.channels = c;
  dst.pixels.resize(plane * c);
  for (size_t i = 0; i < plane; ++i)
    for (int ch = 0; ch < c; ++ch) dst.pixels[i * c + ch] = planes[ch * plane + i];
  return dst;
}

}  // namespace cohort::data
