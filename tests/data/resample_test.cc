// ResizeToChw: the SIMD kernels against the portable ones (same integer
// sums, so equal bytes), the float output against resize + WriteChwFloat,
// mirroring, and boxes that end at the last byte of the source buffer.
#include <gtest/gtest.h>

#include <vector>

#include "data/resample.h"
#include "data/shuffle_rng.h"
#include "data/transforms.h"

namespace cohort::data {
namespace {

Image Noise(int width, int height, int channels, uint64_t seed) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.resize(size_t(width) * height * channels);
  ShuffleRng rng(seed);
  for (uint8_t& p : image.pixels) p = uint8_t(rng.Below(256));
  return image;
}

// Boxes of every kind: whole image, touching each edge, 1 pixel, and
// random ones, for outputs smaller, equal and larger than the box.
std::vector<Box> Boxes(int width, int height, uint64_t seed) {
  std::vector<Box> boxes = {
      {0, 0, width, height},         {0, 0, width / 2 + 1, height / 3 + 1},
      {width - 9, height - 7, 9, 7}, {width / 3, height - 1, width / 2, 1},
      {width - 1, 0, 1, height},     {0, height / 2, width, height - height / 2}};
  ShuffleRng rng(seed);
  for (int i = 0; i < 20; ++i) {
    const int w = 1 + int(rng.Below(uint64_t(width))), h = 1 + int(rng.Below(uint64_t(height)));
    boxes.push_back(
        {int(rng.Below(uint64_t(width - w + 1))), int(rng.Below(uint64_t(height - h + 1))), w, h});
  }
  return boxes;
}

std::vector<uint8_t> ResizeBytes(const Image& src, const Box& box, int w, int h, bool flip,
                                 ResampleKernels kernels) {
  std::vector<uint8_t> out(size_t(src.channels) * w * h);
  ChwTarget target;
  target.flip = flip;
  target.bytes = out.data();
  ResizeToChw(src, box, w, h, target, nullptr, kernels);
  return out;
}

TEST(ResampleTest, SimdKernelsEqualThePortableOnes) {
  if (!ResampleHasSimd()) GTEST_SKIP() << "this CPU has no AVX2: only the portable kernels run";
  const int outputs[][2] = {{224, 224}, {13, 29}, {64, 8}, {300, 301}, {1, 1}};
  for (int channels : {3, 1}) {
    const Image src = Noise(203, 157, channels, 7);
    for (const Box& box : Boxes(src.width, src.height, 11)) {
      for (const auto& size : outputs) {
        for (bool flip : {false, true}) {
          ASSERT_EQ(ResizeBytes(src, box, size[0], size[1], flip, ResampleKernels::kBest),
                    ResizeBytes(src, box, size[0], size[1], flip, ResampleKernels::kPortable))
              << channels << " channels, box " << box.width << "x" << box.height << "+" << box.x
              << "+" << box.y << " to " << size[0] << "x" << size[1] << (flip ? " flipped" : "");
        }
      }
    }
  }
}

TEST(ResampleTest, FloatsAreTheResizedBytesNormalisedAndMirrored) {
  const Image src = Noise(120, 90, 3, 8);
  const std::array<float, 3> mean = {0.485f, 0.456f, 0.406f}, std = {0.229f, 0.224f, 0.225f};
  for (const Box& box : Boxes(src.width, src.height, 12)) {
    for (bool flip : {false, true}) {
      std::vector<float> ours(3 * 48 * 40), expect(3 * 48 * 40);
      ChwTarget target;
      target.flip = flip;
      target.floats = ours.data();
      target.mean = mean;
      target.std = std;
      ResizeToChw(src, box, 48, 40, target);
      WriteChwFloat(ResizeRegion(src, box, 48, 40), flip, mean, std, expect.data());
      for (size_t i = 0; i < ours.size(); ++i) ASSERT_NEAR(ours[i], expect[i], 1e-6) << i;
    }
  }
}

TEST(ResampleTest, ResizeRegionInterleavesThePlanes) {
  // An image whose channels differ: planes must not be swapped or shifted.
  Image src = Noise(10, 6, 3, 9);
  for (size_t i = 0; i < src.pixels.size(); ++i) src.pixels[i] = uint8_t(i % 3 * 100 + i / 3 % 10);
  const Image same = ResizeRegion(src, {0, 0, 10, 6}, 10, 6);
  EXPECT_EQ(same.pixels, src.pixels);
  const std::vector<uint8_t> mirrored =
      ResizeBytes(src, {0, 0, 10, 6}, 10, 6, true, ResampleKernels::kBest);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 10; ++x)
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(mirrored[size_t(c) * 60 + y * 10 + x], src.row(y)[(9 - x) * 3 + c]);
}

}  // namespace
}  // namespace cohort::data
