// The image formats the loader decodes, chosen by the file's signature:
// JPEG (libjpeg-turbo, region decoding) and PNG (libpng, whole images).
// `ingest imagefolder` accepts exactly the files ImageSize accepts.
#ifndef COHORT_DATA_IMAGE_DECODE_H_
#define COHORT_DATA_IMAGE_DECODE_H_

#include <string_view>

#include "cohort/status.h"
#include "data/jpeg.h"

namespace cohort::data {

// Width and height from the header; anything but a JPEG or PNG fails with
// "not a JPEG or PNG image: starts with 0x.. 0x.." (or the decoder's reason).
Result<Box> ImageSize(std::string_view bytes);

// DecodeImage, the loader's decoder for both, is declared in include/cohort/loader.h.
// DecodeImageInto is the same into `*out`, reusing its memory, at 1/scale
// for JPEG (ReducedScale; PNG takes only 1).
Status DecodeImageInto(std::string_view bytes, const Box* region, Box* origin, int scale,
                       Image* out);

// The largest DCT scale denominator (8, 4, 2, else 1) at which a JPEG's
// `crop` still has at least out_size pixels per side; 1 for other formats.
int ReducedScale(std::string_view bytes, const Box& crop, int out_size);
// `box` of a width x height image in the pixels of that image decoded at
// 1/scale (ceil(width / scale) wide): edges rounded outwards, kept inside.
Box ScaleBox(const Box& box, int scale, int width, int height);

}  // namespace cohort::data

#endif  // COHORT_DATA_IMAGE_DECODE_H_
