// PNG decoding with libpng, to the same 8-bit RGB pixels PIL's
// Image.convert("RGB") gives: palettes expanded, gray replicated, alpha
// dropped (not composited), 16-bit samples cut to their high byte.
#ifndef COHORT_DATA_PNG_H_
#define COHORT_DATA_PNG_H_

#include <string_view>

#include "cohort/status.h"
#include "data/jpeg.h"

namespace cohort::data {

// True when `bytes` start with the PNG signature.
bool IsPng(std::string_view bytes);

// Width and height from the PNG header (IHDR); fails on anything that is not a PNG.
Result<Box> PngSize(std::string_view png);

// The whole image as RGB (PNG has no partial decoding worth having: rows are filtered
// against the previous one, and deflate cannot seek).
Result<Image> DecodePng(std::string_view png);

}  // namespace cohort::data

#endif  // COHORT_DATA_PNG_H_
