#include "image_resize.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gputrain::data {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS

// One output pixel's taps along an axis: the first input pixel and a weight per pixel from there.
struct Taps {
  std::vector<int> first, count;
  std::vector<std::int32_t> weights;  // `span` per output pixel
  int span = 0;
};

double triangle(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs and normalize_coeffs_8bpc for the bilinear filter (support 1).
Taps taps_for(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;
  Taps t;
  t.span = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<std::size_t>(out_size));
  t.count.resize(static_cast<std::size_t>(out_size));
  t.weights.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(t.span), 0);
  std::vector<double> w(static_cast<std::size_t>(t.span));
  const double inverse = 1.0 / filter_scale;  // multiplied by, as Pillow does: dividing can round differently
  for (int out = 0; out < out_size; ++out) {
    const double center = (out + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int n = std::min(static_cast<int>(center + support + 0.5), in_size) - lo;
    double sum = 0.0;
    for (int k = 0; k < n; ++k) sum += w[static_cast<std::size_t>(k)] = triangle((k + lo - center + 0.5) * inverse);
    for (int k = 0; k < n; ++k) {
      const double normalised = sum != 0.0 ? w[static_cast<std::size_t>(k)] / sum : w[static_cast<std::size_t>(k)];
      const double fixed = normalised * (1 << kPrecisionBits);
      t.weights[static_cast<std::size_t>(out * t.span + k)] = static_cast<std::int32_t>(fixed < 0 ? fixed - 0.5 : fixed + 0.5);
    }
    t.first[static_cast<std::size_t>(out)] = lo;
    t.count[static_cast<std::size_t>(out)] = n;
  }
  return t;
}

std::uint8_t clip8(std::int32_t sum) {
  if (sum >= (1 << kPrecisionBits << 8)) return 255;
  if (sum <= 0) return 0;
  return static_cast<std::uint8_t>(sum >> kPrecisionBits);
}

// `in` resized to `height` rows; `t` counts rows from `in`'s first row at `row0` of the original.
RgbPixels vertical(const RgbPixels& in, const Taps& t, int row0, int height) {
  const auto row = static_cast<std::size_t>(in.width) * 3;
  RgbPixels out{std::vector<std::uint8_t>(static_cast<std::size_t>(height) * row), height, in.width};
  std::vector<std::int32_t> sums(row);
  for (int y = 0; y < height; ++y) {
    const auto* k = t.weights.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(t.span);
    std::fill(sums.begin(), sums.end(), 1 << (kPrecisionBits - 1));
    for (int i = 0; i < t.count[static_cast<std::size_t>(y)]; ++i) {
      const std::uint8_t* src = in.pixels.data() + static_cast<std::size_t>(t.first[static_cast<std::size_t>(y)] - row0 + i) * row;
      for (std::size_t b = 0; b < row; ++b) sums[b] += src[b] * k[i];
    }
    std::uint8_t* dst = out.pixels.data() + static_cast<std::size_t>(y) * row;
    for (std::size_t b = 0; b < row; ++b) dst[b] = clip8(sums[b]);
  }
  return out;
}

// Rows [row0, row0 + rows) of `in`, resized to `width` columns.
RgbPixels horizontal(const RgbPixels& in, int row0, int rows, int width) {
  const auto t = taps_for(in.width, width);
  RgbPixels out{std::vector<std::uint8_t>(static_cast<std::size_t>(rows) * static_cast<std::size_t>(width) * 3), rows, width};
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* src = in.pixels.data() + static_cast<std::size_t>(row0 + y) * static_cast<std::size_t>(in.width) * 3;
    std::uint8_t* dst = out.pixels.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(width) * 3;
    for (int x = 0; x < width; ++x) {
      const auto* k = t.weights.data() + static_cast<std::size_t>(x) * static_cast<std::size_t>(t.span);
      const std::uint8_t* p = src + static_cast<std::size_t>(t.first[static_cast<std::size_t>(x)]) * 3;
      std::int32_t s[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
      for (int i = 0; i < t.count[static_cast<std::size_t>(x)]; ++i)
        for (int c = 0; c < 3; ++c) s[c] += p[i * 3 + c] * k[i];
      for (int c = 0; c < 3; ++c) dst[x * 3 + c] = clip8(s[c]);
    }
  }
  return out;
}

}  // namespace

RgbPixels resize_bilinear(const RgbPixels& image, int height, int width) {
  const bool across = width != image.width, down = height != image.height;
  if (!down) return across ? horizontal(image, 0, image.height, width) : image;
  const auto t = taps_for(image.height, height);
  if (!across) return vertical(image, t, 0, height);
  // As Pillow: the horizontal pass covers only the rows the vertical one reads.
  const int first = t.first.front(), last = t.first.back() + t.count.back();
  return vertical(horizontal(image, first, last - first, width), t, first, height);
}

std::pair<int, int> cover_size(int image_height, int image_width, int height, int width) {
  const auto h = static_cast<std::int64_t>(image_height), w = static_cast<std::int64_t>(image_width);
  if (static_cast<std::int64_t>(width) * h >= static_cast<std::int64_t>(height) * w)  // the width limits: scale to it
    return {static_cast<int>((2 * h * width + w) / (2 * w)), width};
  return {height, static_cast<int>((2 * w * height + h) / (2 * h))};
}

void crop_centre(const RgbPixels& image, int height, int width, std::uint8_t* chw) {
  const int top = (image.height - height) / 2, left = (image.width - width) / 2;
  const auto plane = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  for (int y = 0; y < height; ++y) {
    const std::uint8_t* src =
        image.pixels.data() +
        (static_cast<std::size_t>(top + y) * static_cast<std::size_t>(image.width) + static_cast<std::size_t>(left)) * 3;
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)
        chw[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
            static_cast<std::size_t>(x)] = src[x * 3 + c];
  }
}

}  // namespace gputrain::data
