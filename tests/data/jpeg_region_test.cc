// Region decoding against full decoding, for every chroma subsampling and
// grayscale, odd sizes and sizes below one block, and regions touching every
// edge: the region's pixels equal the full decode's (scale 1 and DCT
// scales), and crop + resize from a region decode equals crop + resize of
// the full image, exactly at scale 1 and within a stated bound when the
// loader decodes at a reduced DCT scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/image_decode.h"
#include "data/jpeg.h"
#include "data/resample.h"
#include "data/shuffle_rng.h"

namespace cohort::data {
namespace {

// A smooth field plus noise: photo-like, and every block differs.
Image Textured(int width, int height, int channels, uint64_t seed) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.resize(size_t(width) * height * channels);
  ShuffleRng rng(seed);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const int smooth =
            (x * (c + 1) * 255 / std::max(1, width) + y * 255 / std::max(1, height)) / 2;
        image.row(y)[x * channels + c] =
            uint8_t(std::clamp(smooth + int(rng.Below(61)) - 30, 0, 255));
      }
    }
  }
  return image;
}

struct Kind {
  const char* name;
  int channels;
  JpegSubsampling subsampling;
};
const Kind kKinds[] = {{"4:4:4", 3, JpegSubsampling::k444},
                       {"4:2:2", 3, JpegSubsampling::k422},
                       {"4:2:0", 3, JpegSubsampling::k420},
                       {"4:4:0", 3, JpegSubsampling::k440},
                       {"gray", 1, JpegSubsampling::k420}};
const int kSizes[][2] = {{203, 157}, {64, 48}, {13, 9}, {1, 1}, {257, 33}};

// Regions touching each edge and corner, on and off block boundaries, one
// pixel, the whole image, and random ones.
std::vector<Box> Regions(int w, int h, uint64_t seed) {
  std::vector<Box> r = {
      {0, 0, w, h},     {0, 0, 1, 1},           {w - 1, h - 1, 1, 1},     {0, h - 1, w, 1},
      {w - 1, 0, 1, h}, {0, 0, (w + 1) / 2, h}, {w / 2, 0, w - w / 2, h}, {0, h / 2, w, h - h / 2}};
  for (int at : {7, 8, 15, 16, 17, 31, 32, 33}) {
    if (at < w) r.push_back({at, 0, w - at, std::min(h, 20)});
    if (at < h) r.push_back({0, at, std::min(w, 20), h - at});
    if (at < w && at < h) r.push_back({at, at, std::min(w - at, 9), std::min(h - at, 9)});
  }
  ShuffleRng rng(seed);
  for (int i = 0; i < 24; ++i) {
    const int rw = 1 + int(rng.Below(uint64_t(w))), rh = 1 + int(rng.Below(uint64_t(h)));
    r.push_back(
        {int(rng.Below(uint64_t(w - rw + 1))), int(rng.Below(uint64_t(h - rh + 1))), rw, rh});
  }
  return r;
}

std::string Describe(const Kind& kind, const Image& src, const Box& r, int scale) {
  return std::string(kind.name) + " " + std::to_string(src.width) + "x" +
         std::to_string(src.height) + " region " + std::to_string(r.width) + "x" +
         std::to_string(r.height) + "+" + std::to_string(r.x) + "+" + std::to_string(r.y) +
         " at 1/" + std::to_string(scale);
}

TEST(JpegRegionTest, RegionPixelsEqualTheFullDecodeAtEveryScale) {
  for (const Kind& kind : kKinds) {
    for (const auto& size : kSizes) {
      const Image src = Textured(size[0], size[1], kind.channels, size[0] * 31 + size[1]);
      const std::string jpeg = *EncodeJpeg(src, 90, kind.subsampling);
      for (int scale : {1, 2, 4, 8}) {
        Result<Image> full = DecodeJpeg(jpeg, nullptr, nullptr, scale);
        ASSERT_TRUE(full.ok()) << full.status().ToString();
        ASSERT_EQ(full->width, (size[0] + scale - 1) / scale);
        ASSERT_EQ(full->height, (size[1] + scale - 1) / scale);
        for (const Box& r : Regions(full->width, full->height, scale)) {
          const std::string what = Describe(kind, src, r, scale);
          Box origin;
          Result<Image> part = DecodeJpeg(jpeg, &r, &origin, scale);
          ASSERT_TRUE(part.ok()) << what << ": " << part.status().ToString();
          ASSERT_LE(origin.x, r.x) << what;
          ASSERT_LE(origin.y, r.y) << what;
          ASSERT_GE(origin.x + part->width, r.x + r.width) << what;
          ASSERT_GE(origin.y + part->height, r.y + r.height) << what;
          for (int y = 0; y < r.height; ++y) {
            for (int x = 0; x < r.width * 3; ++x) {
              ASSERT_EQ(part->row(r.y - origin.y + y)[(r.x - origin.x) * 3 + x],
                        full->row(r.y + y)[r.x * 3 + x])
                  << what << ", pixel " << x / 3 << "," << y;
            }
          }
        }
      }
    }
  }
}

// The loader's path (ReducedScale, ScaleBox, region decode, ResizeToChw)
// against resizing the crop of a full-size decode.
std::vector<uint8_t> LoaderPath(const std::string& jpeg, const Box& crop, int out, int scale) {
  const Box size = *JpegSize(jpeg);
  const Box region = scale == 1 ? crop : ScaleBox(crop, scale, size.width, size.height);
  Box origin;
  const Image part = *DecodeJpeg(jpeg, &region, &origin, scale);
  std::vector<uint8_t> chw(size_t(3) * out * out);
  ChwTarget target;
  target.bytes = chw.data();
  ResizeToChw(part, {region.x - origin.x, region.y - origin.y, region.width, region.height}, out,
              out, target);
  return chw;
}

TEST(JpegRegionTest, CropAndResizeOfARegionDecodeEqualsThatOfTheFullImage) {
  for (const Kind& kind : kKinds) {
    const Image src = Textured(211, 173, kind.channels, 5);
    const std::string jpeg = *EncodeJpeg(src, 90, kind.subsampling);
    const Image full = *DecodeJpeg(jpeg);
    for (const Box& crop : Regions(211, 173, 9)) {
      for (int out : {24, 224}) {
        std::vector<uint8_t> expect(size_t(3) * out * out);
        ChwTarget target;
        target.bytes = expect.data();
        ResizeToChw(full, crop, out, out, target);
        ASSERT_EQ(LoaderPath(jpeg, crop, out, 1), expect) << Describe(kind, src, crop, 1);
        // DCT scaling (the default): the scaled IDCT is not a resize, so only
        // close. Bound: mean absolute difference per channel value under 6
        // levels of 255 (the textured images' noise of +-30 is the worst
        // case; photos differ far less).
        const int scale = ReducedScale(jpeg, crop, out);
        if (scale == 1) continue;
        const std::vector<uint8_t> scaled = LoaderPath(jpeg, crop, out, scale);
        double diff = 0;
        for (size_t i = 0; i < expect.size(); ++i)
          diff += std::abs(int(scaled[i]) - int(expect[i]));
        EXPECT_LT(diff / double(expect.size()), 6.0) << Describe(kind, src, crop, scale);
      }
    }
  }
}

}  // namespace
}  // namespace cohort::data
