// libpng behind Status. Its errors arrive through longjmp, so the decoding
// runs in a function that holds no C++ object with a destructor.
#include "data/png.h"

#include <png.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace cohort::data {

namespace {

constexpr char kSignature[] = "\x89PNG\r\n\x1a\n";
constexpr uint64_t kMaxPixels = uint64_t{1} << 28;  // 768 MiB of RGB: refuse, do not abort

// Reads from memory for libpng.
struct MemoryReader {
  const unsigned char* data;
  size_t size, offset;
};

struct ErrorState {
  char message[256];
};

void OnError(png_structp png, png_const_charp message) {
  auto* state = static_cast<ErrorState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}  // e.g. a bad CRC in an ancillary chunk

void ReadBytes(png_structp png, png_bytep out, png_size_t n) {
  auto* in = static_cast<MemoryReader*>(png_get_io_ptr(png));
  if (n > in->size - in->offset) png_error(png, "the file ends early (truncated PNG)");
  std::memcpy(out, in->data + in->offset, n);
  in->offset += n;
}

// Header only (`out` null) or the whole image as RGB into `out` (already
// sized by the caller from a header-only pass). False with state->message set on failure.
bool Decode(std::string_view bytes, Box* size, Image* out, std::vector<png_bytep>* rows,
            ErrorState* state) {
  MemoryReader in{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 0};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, state, OnError, OnWarning);
  if (png == nullptr) {
    std::snprintf(state->message, sizeof state->message, "cannot start a PNG decoder");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    if (info == nullptr) std::snprintf(state->message, sizeof state->message, "out of memory");
    png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
    return false;
  }
  png_set_read_fn(png, &in, ReadBytes);
  png_read_info(png, info);
  *size = {0, 0, int(png_get_image_width(png, info)), int(png_get_image_height(png, info))};
  if (out != nullptr) {
    // PIL's convert("RGB"): expand palettes and low bit depths, replicate gray,
    // keep the high byte of 16-bit samples, drop alpha (tRNS is not applied).
    png_set_palette_to_rgb(png);
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != size_t(size->width) * 3)
      png_error(png, "unexpected row layout after conversion to RGB");
    for (int y = 0; y < size->height; ++y) (*rows)[y] = out->row(y);
    png_read_image(png, rows->data());
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

bool IsPng(std::string_view bytes) { return bytes.substr(0, 8) == std::string_view(kSignature, 8); }

Result<Box> PngSize(std::string_view png) {
  if (!IsPng(png)) return Status::InvalidArgument("not a PNG image (no PNG signature)");
  ErrorState state{};
  Box size;
  if (!Decode(png, &size, nullptr, nullptr, &state))
    return Status::InvalidArgument(std::string("not a readable PNG image: ") + state.message);
  if (size.width <= 0 || size.height <= 0)
    return Status::InvalidArgument("not a readable PNG image: it has no pixels");
  return size;
}

Result<Image> DecodePng(std::string_view png) {
  Result<Box> size = PngSize(png);
  if (!size.ok()) return size.status();
  if (uint64_t(size->width) * uint64_t(size->height) > kMaxPixels) {
    return Status::InvalidArgument("PNG image of " + std::to_string(size->width) + "x" +
                                   std::to_string(size->height) +
                                   " pixels is too large to decode (limit 2^28 pixels)");
  }
  Image image;
  image.width = size->width;
  image.height = size->height;
  image.channels = 3;
  image.pixels.resize(size_t(image.width) * image.height * 3);
  std::vector<png_bytep> rows(image.height);
  ErrorState state{};
  Box again;
  if (!Decode(png, &again, &image, &rows, &state))
    return Status::InvalidArgument(std::string("cannot decode PNG: ") + state.message);
  return image;
}

}  // namespace cohort::data
