#pragma once
// Resizing decoded images with Pillow's antialiased bilinear algorithm (Image.resize(size,
// BILINEAR), what torchvision's Resize runs on PIL images), so Python reproduces gputrain's samples
// byte for byte (docs/examples/predict.py's image_sample): a triangle filter whose support widens
// with the downscale, weights in fixed point with 22 fractional bits, the column pass first, each
// pass rounded to 8 bits (Pillow's src/libImaging/Resample.c; Pillow 13 runs the row pass first for
// some sizes, a level apart on a few pixels).

#include <cstdint>
#include <vector>

namespace gputrain::data {

/// An 8-bit RGB image, rows of width x 3 bytes.
struct RgbPixels {
  std::vector<std::uint8_t> pixels;  // HWC
  int height = 0, width = 0;
};

/// `image` resized to height x width.
RgbPixels resize_bilinear(const RgbPixels& image, int height, int width);

/// The size that covers height x width with the image's aspect ratio: one side equals the target,
/// the other is the image's scaled to it, rounded half up (integer arithmetic, so Python gets the
/// same): {rows, columns}.
std::pair<int, int> cover_size(int image_height, int image_width, int height, int width);

/// Writes the centre height x width of `image` (at least that large) to `chw`, planes of RGB; the
/// crop starts at ((H - height) / 2, (W - width) / 2), rounded down.
void crop_centre(const RgbPixels& image, int height, int width, std::uint8_t* chw);

}  // namespace gputrain::data
