// libjpeg-turbo behind Status: the libjpeg API for (region) decoding, whose
// errors arrive through longjmp, and TurboJPEG for encoding.
#include "data/jpeg.h"

#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

namespace cohort::data {

namespace {

// Pixels decoded beyond a region so that its edges equal a full decode.
// Fancy upsampling blends a chroma sample with its neighbours: at the right
// edge the next sample must be decoded (2 pixels), and at a left edge on an
// iMCU boundary the block column before it (libjpeg widens the crop to
// that boundary, so a 1-pixel margin costs nothing elsewhere). Rows need
// none: jpeg_skip_scanlines and the context rows of jpeg_read_scanlines
// keep vertical upsampling exact. tests/data/jpeg_region_test.cc checks
// every subsampling at every edge.
constexpr unsigned kMarginLeft = 1, kMarginTop = 0, kMarginRight = 2, kMarginBottom = 0;

struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool bad_region = false;  // the failure is the caller's region, not the data
};

void OnError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  cinfo->err->format_message(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void IgnoreMessage(j_common_ptr) {}

bool RegionInside(const Box& r, unsigned width, unsigned height) {
  return r.x >= 0 && r.y >= 0 && r.width > 0 && r.height > 0 &&
         unsigned(r.x) + unsigned(r.width) <= width && unsigned(r.y) + unsigned(r.height) <= height;
}  // warnings (e.g. extraneous bytes) are not errors

// The libjpeg part, kept free of C++ objects with destructors because
// longjmp would skip them. Returns false with err->message set on failure.
bool DecodeInto(std::string_view jpeg, const Box* region, int scale_denom, Image* out, Box* origin,
                ErrorManager* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->base);
  err->base.error_exit = OnError;
  err->base.output_message = IgnoreMessage;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(jpeg.data()),
               static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&cinfo, TRUE);
  // DCT-domain scaling: the IDCT itself outputs 1/2, 1/4 or 1/8 size.
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(scale_denom);
  jpeg_calc_output_dimensions(&cinfo);
  if (region != nullptr && !RegionInside(*region, cinfo.output_width, cinfo.output_height)) {
    std::snprintf(err->message, sizeof err->message,
                  "JPEG region %dx%d+%d+%d lies outside the %ux%u image", region->width,
                  region->height, region->x, region->y, cinfo.output_width, cinfo.output_height);
    err->bad_region = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  JDIMENSION x = 0, width = cinfo.output_width, y = 0, height = cinfo.output_height;
  if (region != nullptr) {
    x = static_cast<JDIMENSION>(region->x) > kMarginLeft ? region->x - kMarginLeft : 0;
    y = static_cast<JDIMENSION>(region->y) > kMarginTop ? region->y - kMarginTop : 0;
    width = std::min<JDIMENSION>(region->x + region->width + kMarginRight, cinfo.output_width) - x;
    height =
        std::min<JDIMENSION>(region->y + region->height + kMarginBottom, cinfo.output_height) - y;
    if (x != 0 || width != cinfo.output_width) jpeg_crop_scanline(&cinfo, &x, &width);
    if (y > 0) jpeg_skip_scanlines(&cinfo, y);
  }
  out->width = static_cast<int>(cinfo.output_width);  // the cropped width
  out->height = static_cast<int>(height);
  out->channels = 3;
  out->pixels.resize(size_t(out->width) * out->height * 3);
  // Every row's pointer at once: libjpeg then writes its row groups (two
  // rows for 2x2 chroma) in place instead of through a spare row.
  auto* rows = static_cast<JSAMPARRAY>((*cinfo.mem->alloc_small)(
      reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE, sizeof(JSAMPROW) * height));
  for (JDIMENSION r = 0; r < height; ++r) rows[r] = out->row(static_cast<int>(r));
  while (cinfo.output_scanline < y + height) {
    const JDIMENSION done = cinfo.output_scanline - y;
    jpeg_read_scanlines(&cinfo, rows + done, height - done);
  }
  if (origin != nullptr) *origin = {int(x), int(y), out->width, out->height};
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

Result<Box> JpegSize(std::string_view jpeg) {
  tjhandle tj = tjInitDecompress();
  if (tj == nullptr) return Status::Internal("cannot start a TurboJPEG decoder");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  const int rc = tjDecompressHeader3(tj, reinterpret_cast<const unsigned char*>(jpeg.data()),
                                     static_cast<unsigned long>(jpeg.size()), &width, &height,
                                     &subsampling, &colorspace);
  std::string why = rc != 0 ? tjGetErrorStr2(tj) : "";
  tjDestroy(tj);
  if (rc != 0) return Status::InvalidArgument("not a JPEG image: " + why);
  return Box{0, 0, width, height};
}

Status DecodeJpegInto(std::string_view jpeg, const Box* region, Box* origin, int scale_denom,
                      Image* out) {
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8)
    return Status::InvalidArgument("JPEG scale 1/" + std::to_string(scale_denom) +
                                   " is not 1/1, 1/2, 1/4 or 1/8");
  ErrorManager err;
  if (!DecodeInto(jpeg, region, scale_denom, out, origin, &err)) {
    if (err.bad_region) return Status::InvalidArgument(err.message);
    return Status::InvalidArgument(std::string("cannot decode JPEG: ") + err.message);
  }
  return Status::OK();
}

Result<Image> DecodeJpeg(std::string_view jpeg, const Box* region, Box* origin, int scale_denom) {
  Image image;
  COHORT_RETURN_IF_ERROR(DecodeJpegInto(jpeg, region, origin, scale_denom, &image));
  return image;
}

Result<std::string> EncodeJpeg(const Image& image, int quality, JpegSubsampling subsampling) {
  if (image.channels != 3 && image.channels != 1)
    return Status::InvalidArgument("JPEG needs 1 or 3 channels, image has " +
                                   std::to_string(image.channels));
  tjhandle tj = tjInitCompress();
  if (tj == nullptr) return Status::Internal("cannot start a TurboJPEG encoder");
  const int chroma[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440};
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(tj, image.pixels.data(), image.width, 0, image.height,
                  image.channels == 3 ? TJPF_RGB : TJPF_GRAY, &out, &size,
                  image.channels == 3 ? chroma[int(subsampling)] : TJSAMP_GRAY, quality, 0);
  std::string why = rc != 0 ? tjGetErrorStr2(tj) : "";
  std::string bytes = rc == 0 ? std::string(reinterpret_cast<char*>(out), size) : "";
  tjFree(out);
  tjDestroy(tj);
  if (rc != 0) return Status::InvalidArgument("cannot encode JPEG: " + why);
  return bytes;
}

}  // namespace cohort::data
