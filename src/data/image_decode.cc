// Dispatch on the signature: FF D8 is JPEG, 89 'PNG' is PNG, the rest is refused.
#include "data/image_decode.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "data/png.h"

namespace cohort::data {

namespace {

bool IsJpeg(std::string_view bytes) {
  return bytes.size() >= 2 && uint8_t(bytes[0]) == 0xFF && uint8_t(bytes[1]) == 0xD8;
}

Status Unknown(std::string_view bytes) {
  std::string start;
  for (size_t i = 0; i < bytes.size() && i < 4; ++i) {
    char hex[8];
    std::snprintf(hex, sizeof hex, " 0x%02X", unsigned(uint8_t(bytes[i])));
    start += hex;
  }
  return Status::InvalidArgument("not a JPEG or PNG image: " + (start.empty()
                                                                    ? std::string("it is empty")
                                                                    : "starts with" + start));
}

}  // namespace

int ReducedScale(std::string_view bytes, const Box& crop, int out_size) {
  if (!IsJpeg(bytes) || out_size <= 0) return 1;
  int scale = 8;
  while (scale > 1 && (crop.width / scale < out_size || crop.height / scale < out_size)) scale /= 2;
  return scale;
}

Box ScaleBox(const Box& box, int scale, int width, int height) {
  const int scaled_width = (width + scale - 1) / scale,
            scaled_height = (height + scale - 1) / scale;
  const int x0 = box.x / scale, y0 = box.y / scale;
  const int x1 = std::min(scaled_width, (box.x + box.width + scale - 1) / scale);
  const int y1 = std::min(scaled_height, (box.y + box.height + scale - 1) / scale);
  return {x0, y0, std::max(1, x1 - x0), std::max(1, y1 - y0)};
}

Result<Box> ImageSize(std::string_view bytes) {
  if (IsPng(bytes)) return PngSize(bytes);
  if (IsJpeg(bytes)) return JpegSize(bytes);
  return Unknown(bytes);
}

Status DecodeImageInto(std::string_view bytes, const Box* region, Box* origin, int scale,
                       Image* out) {
  if (IsJpeg(bytes)) return DecodeJpegInto(bytes, region, origin, scale, out);
  if (!IsPng(bytes)) return Unknown(bytes);
  if (scale != 1) return Status::InvalidArgument("PNG images decode only at full scale");
  Result<Image> image = DecodePng(bytes);
  if (!image.ok()) return image.status();
  if (region != nullptr &&
      (region->x < 0 || region->y < 0 || region->width <= 0 || region->height <= 0 ||
       region->x + region->width > image->width || region->y + region->height > image->height)) {
    return Status::InvalidArgument("PNG region lies outside the " + std::to_string(image->width) +
                                   "x" + std::to_string(image->height) + " image");
  }
  if (origin != nullptr) *origin = {0, 0, image->width, image->height};
  *out = std::move(*image);
  return Status::OK();
}

Result<Image> DecodeImage(std::string_view bytes, const Box* region, Box* origin) {
  Image image;
  COHORT_RETURN_IF_ERROR(DecodeImageInto(bytes, region, origin, 1, &image));
  return image;
}

}  // namespace cohort::data
