#pragma once
// JPEG (libjpeg-turbo) and PNG (libpng) decoding to a fixed-size uint8 CHW RGB sample.

#include <cstdint>
#include <string>

namespace gputrain::data {

/// Decodes `bytes` (a whole JPEG or PNG file, told apart by its signature), scales it so it covers
/// height x width keeping its aspect ratio, crops the centre and writes 3 x height x width bytes to
/// `chw`, as docs/examples/predict.py's image_sample does it in Python (docs/data.md, "Images"): a
/// JPEG at least twice the size is decoded at 1/2, 1/4 or 1/8 scale in the DCT as Pillow's
/// Image.draft("RGB", (width, height)) asks; then Pillow's antialiased bilinear resize to
/// cover_size and the centre crop (image_resize.hpp). Throws SkippedSample with the decoder's
/// reason for a corrupt file, and with the size for one of more pixels than Pillow opens (its
/// decompression-bomb limit), before decoding it.
void decode_image_into(const unsigned char* bytes, std::size_t size, std::int64_t height, std::int64_t width, std::uint8_t* chw);

}  // namespace gputrain::data
