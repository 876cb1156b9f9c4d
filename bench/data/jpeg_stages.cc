// Where the loader's JPEG time goes: CPU time per image of each stage of
// the train pipeline (header + crop box, region decode, resize into a CHW
// float row), and for reference the whole image's Huffman decoding alone
// (jpeg_read_coefficients) and its full decode to RGB. One thread.
//
//   jpeg_stages_bench DIR [images=1000] [repetitions=2]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

#include "cohort/loader.h"
#include "data/image_decode.h"
#include "data/resample.h"
#include "data/shuffle_rng.h"
#include "data/transforms.h"

namespace {

using namespace cohort::data;

double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::vector<std::string> ReadJpegs(const std::string& dir, size_t limit) {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".JPEG") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> files;
  for (size_t i = 0; i < paths.size() && i < limit; ++i) {
    std::ifstream f(paths[i], std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    files.push_back(s.str());
  }
  return files;
}

// libjpeg without the loader: Huffman decoding only, or a full RGB decode.
double ReferenceDecode(const std::vector<std::string>& files, bool entropy_only) {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_decompress(&cinfo);
  std::vector<JSAMPLE> row;
  const double start = CpuSeconds();
  for (const std::string& f : files) {
    jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(f.data()), f.size());
    jpeg_read_header(&cinfo, TRUE);
    if (entropy_only) {
      jpeg_read_coefficients(&cinfo);
    } else {
      cinfo.out_color_space = JCS_RGB;
      jpeg_start_decompress(&cinfo);
      row.resize(size_t(cinfo.output_width) * 3);
      while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW r = row.data();
        jpeg_read_scanlines(&cinfo, &r, 1);
      }
    }
    jpeg_abort_decompress(&cinfo);
  }
  const double seconds = CpuSeconds() - start;
  jpeg_destroy_decompress(&cinfo);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [images=1000] [repetitions=2]\n", argv[0]);
    return 2;
  }
  const size_t limit = argc > 2 ? size_t(std::atol(argv[2])) : 1000;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 2;
  const std::vector<std::string> files = ReadJpegs(argv[1], limit);
  if (files.empty()) {
    std::fprintf(stderr, "no .jpg files under %s\n", argv[1]);
    return 2;
  }
  ImageOptions options;
  options.size = 224;
  double box_s = 0, decode_s = 0, resize_s = 0;
  double decoded_pixels = 0, crop_pixels = 0;
  Image decoded;
  std::vector<uint8_t> scratch;
  std::vector<float> row(3 * 224 * 224);
  for (int r = 0; r < reps; ++r) {
    for (size_t i = 0; i < files.size(); ++i) {
      const double t0 = CpuSeconds();
      ShuffleRng rng(i * 7919 + r);
      const Box size = *ImageSize(files[i]);
      const Box crop = RandomResizedCropBox(size.width, size.height, options, &rng);
      ChwTarget target;
      target.flip = rng.Uniform() < options.flip_probability;
      target.floats = row.data();
      target.mean = options.mean;
      target.std = options.std;
      const int scale = ReducedScale(files[i], crop, options.size);
      const Box region = scale == 1 ? crop : ScaleBox(crop, scale, size.width, size.height);
      const double t1 = CpuSeconds();
      Box origin;
      if (!DecodeImageInto(files[i], &region, &origin, scale, &decoded).ok()) return 1;
      const double t2 = CpuSeconds();
      ResizeToChw(decoded, {region.x - origin.x, region.y - origin.y, region.width, region.height},
                  224, 224, target, &scratch);
      const double t3 = CpuSeconds();
      box_s += t1 - t0;
      decode_s += t2 - t1;
      resize_s += t3 - t2;
      decoded_pixels += double(decoded.width) * decoded.height;
      crop_pixels += double(region.width) * region.height;
    }
  }
  const double n = double(files.size()) * reps, us = 1e6 / n;
  std::printf("%zu images x %d, microseconds of CPU per image (one thread)%s\n", files.size(), reps,
              ResampleHasSimd() ? ", AVX2 resize" : ", portable resize");
  std::printf("  header + crop box      %7.1f\n", box_s * us);
  std::printf("  region decode          %7.1f  (%.2fx the crop's pixels)\n", decode_s * us,
              decoded_pixels / crop_pixels);
  std::printf("  resize into CHW floats %7.1f\n", resize_s * us);
  std::printf("  pipeline               %7.1f  (%.0f images per CPU second)\n",
              (box_s + decode_s + resize_s) * us, n / (box_s + decode_s + resize_s));
  std::printf("reference, the whole image:\n");
  std::printf("  Huffman decoding only  %7.1f\n",
              ReferenceDecode(files, true) * 1e6 / files.size());
  std::printf("  full decode to RGB     %7.1f\n",
              ReferenceDecode(files, false) * 1e6 / files.size());
  return 0;
}
