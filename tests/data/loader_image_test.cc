// The loader's image path: JPEG decode (whole and by region) against the
// pixels encoded, exact crops, flips and CHW conversion on raw arrays, the
// crop boxes' bounds and determinism, and image columns through the loader.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cohort/loader.h"
#include "data/data_test_util.h"
#include "data/image_decode.h"
#include "data/jpeg.h"
#include "data/shuffle_rng.h"
#include "data/transforms.h"

namespace cohort::data {
namespace {

using testing::TempDir;

// A smooth RGB pattern (JPEG keeps it within a few levels).
Image Gradient(int width, int height, int phase = 0) {
  Image image;
  image.width = width;
  image.height = height;
  image.pixels.resize(size_t(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = image.row(y) + size_t(x) * 3;
      p[0] = uint8_t(255 * x / std::max(1, width - 1));
      p[1] = uint8_t(255 * y / std::max(1, height - 1));
      p[2] = uint8_t((x + y + phase) % 256);
    }
  }
  return image;
}

Image Noise(int width, int height, uint64_t seed) {
  Image image;
  image.width = width;
  image.height = height;
  image.pixels.resize(size_t(width) * height * 3);
  ShuffleRng rng(seed);
  for (uint8_t& p : image.pixels) p = uint8_t(rng.Below(256));
  return image;
}

int MaxDifference(const Image& a, const Image& b) {
  EXPECT_EQ(a.pixels.size(), b.pixels.size());
  int most = 0;
  for (size_t i = 0; i < a.pixels.size() && i < b.pixels.size(); ++i)
    most = std::max(most, std::abs(int(a.pixels[i]) - int(b.pixels[i])));
  return most;
}

TEST(JpegTest, DecodesWhatWasEncodedWithinJpegLoss) {
  const Image original = Gradient(96, 64);
  Result<std::string> jpeg = EncodeJpeg(original, 95);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();
  Result<Box> size = JpegSize(*jpeg);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, (Box{0, 0, 96, 64}));
  Result<Image> decoded = DecodeJpeg(*jpeg);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->width, 96);
  EXPECT_EQ(decoded->height, 64);
  EXPECT_LE(MaxDifference(*decoded, original), 12);
}

TEST(JpegTest, RegionDecodeEqualsTheSameRegionOfAFullDecode) {
  const Image original = Noise(203, 157, 1);
  const std::string jpeg = *EncodeJpeg(original, 90);
  const Image full = *DecodeJpeg(jpeg);
  for (Box region :
       {Box{0, 0, 203, 157}, Box{37, 21, 100, 80}, Box{150, 100, 53, 57}, Box{1, 150, 7, 7}}) {
    Box origin;
    Result<Image> part = DecodeJpeg(jpeg, &region, &origin);
    ASSERT_TRUE(part.ok()) << part.status().ToString();
    EXPECT_LE(origin.x, region.x);
    EXPECT_LE(origin.y, region.y);
    ASSERT_GE(origin.x + part->width, region.x + region.width);
    ASSERT_GE(origin.y + part->height, region.y + region.height);
    EXPECT_LE(size_t(part->width) * part->height, size_t(region.width + 48) * (region.height + 32));
    for (int y = 0; y < region.height; ++y) {
      for (int x = 0; x < region.width * 3; ++x) {
        ASSERT_EQ(part->row(region.y - origin.y + y)[(region.x - origin.x) * 3 + x],
                  full.row(region.y + y)[region.x * 3 + x])
            << "region " << region.x << "," << region.y << " pixel " << x / 3 << "," << y;
      }
    }
  }
}

TEST(JpegTest, RejectsWhatIsNotAJpegAndRegionsOutside) {
  Result<Image> junk = DecodeJpeg("definitely not a jpeg");
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.status().code(), Status::Code::kInvalidArgument);
  const std::string jpeg = *EncodeJpeg(Gradient(32, 16), 90);
  Result<Image> truncated = DecodeJpeg(std::string_view(jpeg).substr(0, 20));
  EXPECT_FALSE(truncated.ok());
  Box outside{20, 0, 20, 16};
  Result<Image> part = DecodeJpeg(jpeg, &outside);
  ASSERT_FALSE(part.ok());
  EXPECT_EQ(part.status().message(), "JPEG region 20x16+20+0 lies outside the 32x16 image");
}

TEST(TransformsTest, ResizeToTheSameSizeIsAnExactCrop) {
  const Image src = Noise(40, 30, 2);
  const Image crop = ResizeRegion(src, {5, 7, 20, 10}, 20, 10);
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 60; ++x) ASSERT_EQ(crop.row(y)[x], src.row(7 + y)[15 + x]);
  }
}

TEST(TransformsTest, ResizeKeepsAConstantImageAndAveragesWhenHalving) {
  Image flat = Noise(16, 16, 3);
  std::fill(flat.pixels.begin(), flat.pixels.end(), 77);
  const Image small = ResizeRegion(flat, {0, 0, 16, 16}, 5, 7);
  for (uint8_t p : small.pixels) EXPECT_EQ(p, 77);
  // Halving a 2x2 checkerboard of 0/200 averages to 100 everywhere but the
  // border, where the triangle filter's taps are cut off.
  Image board = flat;
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 3; ++c) board.row(y)[x * 3 + c] = ((x + y) % 2) ? 200 : 0;
  const Image half = ResizeRegion(board, {0, 0, 16, 16}, 8, 8);
  for (int y = 1; y < 7; ++y)
    for (int x = 3; x < 21; ++x) EXPECT_EQ(half.row(y)[x], 100) << x << "," << y;
}

TEST(TransformsTest, ChwWritesAreExactWithAndWithoutFlip) {
  const Image src = Noise(5, 3, 4);
  std::vector<uint8_t> plain(45), flipped(45);
  WriteChwUint8(src, false, plain.data());
  WriteChwUint8(src, true, flipped.data());
  std::vector<float> normalised(45);
  WriteChwFloat(src, true, {0.5f, 0.25f, 0.0f}, {0.5f, 2.0f, 1.0f}, normalised.data());
  const float mean[3] = {0.5f, 0.25f, 0.0f}, std[3] = {0.5f, 2.0f, 1.0f};
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 3; ++y) {
      for (int x = 0; x < 5; ++x) {
        const size_t at = size_t(c) * 15 + y * 5 + x;
        EXPECT_EQ(plain[at], src.row(y)[x * 3 + c]);
        EXPECT_EQ(flipped[at], src.row(y)[(4 - x) * 3 + c]);
        EXPECT_NEAR(normalised[at], (src.row(y)[(4 - x) * 3 + c] / 255.0f - mean[c]) / std[c],
                    1e-5);
      }
    }
  }
}

TEST(TransformsTest, CropBoxesStayInsideAndFollowTheSeed) {
  ImageOptions o;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    ShuffleRng a(seed), b(seed);
    const int w = 50 + int(seed % 400), h = 60 + int(seed * 7 % 300);
    const Box box = RandomResizedCropBox(w, h, o, &a);
    ASSERT_EQ(box, RandomResizedCropBox(w, h, o, &b));
    ASSERT_GE(box.x, 0);
    ASSERT_GE(box.y, 0);
    ASSERT_GT(box.width, 0);
    ASSERT_GT(box.height, 0);
    ASSERT_LE(box.x + box.width, w);
    ASSERT_LE(box.y + box.height, h);
    const double area = double(box.width) * box.height / (double(w) * h);
    ASSERT_LE(area, 1.0);
    ASSERT_GE(area, 0.07);
  }
  EXPECT_EQ(CenterCropBox(200, 100, 0.5), (Box{75, 25, 50, 50}));
  // A very wide image falls back to the widest allowed central crop.
  ImageOptions narrow;
  narrow.scale_min = narrow.scale_max = 1.0;
  ShuffleRng rng(1);
  EXPECT_EQ(RandomResizedCropBox(400, 100, narrow, &rng), (Box{133, 0, 133, 100}));
}

// Writes `n` JPEGs of varying size with label i % 3.
void MakeImageDataset(const std::string& dir, int n) {
  WriterOptions options;
  options.chunk_bytes = 8 << 10;
  auto w =
      Writer::Create(dir, {{"image", ColumnKind::kImage}, {"label", ColumnKind::kLabel}}, options);
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < n; ++i) {
    const std::string jpeg = *EncodeJpeg(Gradient(40 + i % 7 * 9, 30 + i % 5 * 11, i), 90);
    ASSERT_TRUE((*w)->Append({Value::Image(jpeg), Value::Label(i % 3)}).ok());
  }
  ASSERT_TRUE((*w)->Commit({"images"}).ok());
}

TEST(LoaderImageTest, CenterCropBatchesMatchTheTransformsAppliedByHand) {
  TempDir dir;
  MakeImageDataset(dir.path(), 24);
  LoaderOptions o;
  o.batch_size = 6;
  o.image.size = 16;
  o.image.random_crop = false;
  o.image.to_float = false;
  o.image.dct_scaling = false;  // exact: the pixels of a full decode and resize
  auto loader = Loader::Open(dir.path(), o);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  auto ds = Dataset::Open(dir.path());
  int batches = 0;
  while (true) {
    auto b = (*loader)->Next();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) break;
    ++batches;
    const Tensor& images = (*b)->column("image");
    const Tensor& labels = (*b)->column("label");
    ASSERT_EQ(images.shape, (std::vector<uint64_t>{6, 3, 16, 16}));
    ASSERT_EQ(labels.dtype, DataType::kInt64);
    for (size_t k = 0; k < 6; ++k) {
      const uint64_t i = (*b)->indices[k];
      EXPECT_EQ(labels.data<int64_t>()[k], int64_t(i % 3));
      Sample s = *(*ds)->Get(i);
      const Image full = *DecodeJpeg(s[0].bytes);
      const Image expect =
          ResizeRegion(full, CenterCropBox(full.width, full.height, 0.875), 16, 16);
      std::vector<uint8_t> chw(3 * 16 * 16);
      WriteChwUint8(expect, false, chw.data());
      ASSERT_EQ(0, std::memcmp(chw.data(), images.data<uint8_t>() + k * chw.size(), chw.size()))
          << "sample " << i;
    }
  }
  EXPECT_EQ(batches, 4);
}

// DCT scaling decodes at the smallest scale that still covers the output,
// and its pixels stay close to the exact full-size path.
TEST(LoaderImageTest, DctScalingDecodesSmallerAndStaysCloseToTheExactPixels) {
  const std::string jpeg = *EncodeJpeg(Gradient(203, 161, 5), 95);
  EXPECT_EQ(ReducedScale(jpeg, {0, 0, 203, 161}, 24), 4);  // 161 / 8 < 24 <= 161 / 4
  EXPECT_EQ(ReducedScale(jpeg, {0, 0, 203, 161}, 100), 1);
  EXPECT_EQ(ReducedScale("\x89PNG", {0, 0, 203, 161}, 24), 1);
  EXPECT_EQ(ScaleBox({5, 6, 100, 90}, 4, 203, 161), (Box{1, 1, 26, 23}));
  Box origin;
  auto quarter = DecodeJpeg(jpeg, nullptr, &origin, 4);
  ASSERT_TRUE(quarter.ok()) << quarter.status().ToString();
  EXPECT_EQ(quarter->width, 51);
  EXPECT_EQ(quarter->height, 41);
  EXPECT_EQ(DecodeJpeg(jpeg, nullptr, nullptr, 3).status().message(),
            "JPEG scale 1/3 is not 1/1, 1/2, 1/4 or 1/8");

  TempDir dir;
  auto w = Writer::Create(dir.path(), {{"image", ColumnKind::kImage}});
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE((*w)->Append({Value::Image(*EncodeJpeg(Gradient(180 + i * 9, 150 + i * 7, i), 95))})
                    .ok());
  ASSERT_TRUE((*w)->Commit({"large"}).ok());
  std::vector<std::vector<uint8_t>> runs;
  for (bool scaled : {false, true}) {
    LoaderOptions o;
    o.batch_size = 8;
    o.shuffle = false;
    o.image.size = 32;
    o.image.to_float = false;
    o.image.dct_scaling = scaled;
    auto loader = Loader::Open(dir.path(), o);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    auto b = (*loader)->Next();
    ASSERT_TRUE(b.ok() && *b);
    const Tensor& t = (*b)->column("image");
    runs.emplace_back(t.data<uint8_t>(), t.data<uint8_t>() + t.nbytes);
  }
  double diff = 0;
  for (size_t i = 0; i < runs[0].size(); ++i) diff += std::abs(int(runs[0][i]) - int(runs[1][i]));
  diff /= double(runs[0].size());
  EXPECT_GT(diff, 0.0);  // it did take the other path
  EXPECT_LT(diff, 6.0) << "mean absolute difference per channel value";
}

TEST(LoaderImageTest, RandomCropsAreTheSameForAnyThreadCountAndDifferByEpoch) {
  TempDir dir;
  MakeImageDataset(dir.path(), 20);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 3}) {
    LoaderOptions o;
    o.batch_size = 5;
    o.image.size = 12;
    o.threads = threads;
    auto loader = Loader::Open(dir.path(), o);
    ASSERT_TRUE(loader.ok());
    std::vector<float> all;
    for (int epoch = 0; epoch < 2; ++epoch) {
      while (true) {
        auto b = (*loader)->Next();
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        if (!*b) break;
        const Tensor& t = (*b)->column("image");
        ASSERT_EQ(t.dtype, DataType::kFloat32);
        all.insert(all.end(), t.data<float>(), t.data<float>() + t.nbytes / 4);
      }
    }
    runs.push_back(all);
  }
  ASSERT_EQ(runs[0].size(), 2u * 20 * 3 * 12 * 12);
  EXPECT_EQ(runs[0], runs[1]);
  const size_t half = runs[0].size() / 2;
  EXPECT_FALSE(std::equal(runs[0].begin(), runs[0].begin() + half, runs[0].begin() + half));
}

TEST(LoaderImageTest, DifferentSizesWithoutACropFailNamingTheColumn) {
  TempDir dir;
  MakeImageDataset(dir.path(), 4);
  LoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  auto loader = Loader::Open(dir.path(), o);
  auto b = (*loader)->Next();
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("column 'image': an image of [3,41,49] cannot join a "
                                      "batch of [3,30,40]"),
            std::string::npos)
      << b.status().message();
}

}  // namespace
}  // namespace cohort::data
