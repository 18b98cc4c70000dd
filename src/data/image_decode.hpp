#pragma once
// JPEG (libjpeg-turbo) and PNG (libpng) decoding to a fixed-size uint8 CHW RGB sample.

#include <cstdint>
#include <string>

namespace gputrain::data {

/// Decodes `bytes` (a whole JPEG or PNG file, told apart by its signature), scales it so it covers
/// height x width keeping its aspect ratio (bilinear), crops the centre and writes 3 x height x
/// width bytes to `chw`. Throws SkippedSample with the decoder's reason for a corrupt file.
void decode_image_into(const unsigned char* bytes, std::size_t size, std::int64_t height, std::int64_t width, std::uint8_t* chw);

}  // namespace gputrain::data
