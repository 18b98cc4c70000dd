#include "image_decode.hpp"

#include <png.h>
// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>  // JWRN_JPEG_EOF
#include <jpeglib.h>
#include <cstdio>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <vector>

#include "gputrain/core/units.hpp"
#include "gputrain/data/dataset.hpp"
#include "image_resize.hpp"
#include "stand_in_file.hpp"

namespace gputrain::data {
namespace {

struct RgbImage : RgbPixels {
  std::vector<std::uint8_t> cmyk_row;                     // decode_jpeg's scratch, here because no destructor may live across its setjmp
  std::uint64_t declared_width = 0, declared_height = 0;  // the header's, read before any pixel is decoded
};

// Pillow's Image.open refuses an image of more pixels than this (DecompressionBombError, twice its
// Image.MAX_IMAGE_PIXELS), so docs/examples/predict.py could not read it back either. The bound
// comes before decoding: a 1 MB PNG of 32000 x 32000 zeros would take 4 GB and 8 s per loader thread.
constexpr std::uint64_t kMaxPixels = 178'956'970;

bool too_many_pixels(const RgbImage& image) { return image.declared_width * image.declared_height > kMaxPixels; }

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

// A warning is no failure (extraneous bytes before a marker, say), except the file ending before
// the image does: libjpeg would fill the rest grey and train on it, where Pillow refuses the file
// as truncated.
void jpeg_warning(j_common_ptr info, int level) {
  if (level == -1 && info->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(info);
}

// R = (255 - C)(255 - K) / 255 and so on, rounded: Pillow's conversion of the same file.
void cmyk_to_rgb(const JSAMPLE* cmyk, int width, bool inverted, JSAMPLE* rgb) {
  for (int x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const unsigned k = inverted ? cmyk[3] : 255U - cmyk[3];
    for (int c = 0; c < 3; ++c) {
      const unsigned ink_free = inverted ? cmyk[c] : 255U - cmyk[c];
      rgb[c] = static_cast<JSAMPLE>((ink_free * k + 127) / 255);
    }
  }
}

// Plain C inside: nothing with a destructor lives across the setjmp.
bool decode_jpeg(const unsigned char* bytes, std::size_t size, int min_height, int min_width, RgbImage& out, char* why) {
  jpeg_decompress_struct info;
  JpegError error;
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = jpeg_fail;
  error.manager.emit_message = jpeg_warning;
  if (setjmp(error.jump)) {
    std::strcpy(why, error.message);
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes, static_cast<unsigned long>(size));
  jpeg_read_header(&info, TRUE);
  out.declared_width = info.image_width;
  out.declared_height = info.image_height;
  if (too_many_pixels(out)) {
    jpeg_destroy_decompress(&info);
    return true;  // decode_image_into skips it, with the size
  }
  // libjpeg converts grey and YCbCr to RGB itself, but not CMYK or YCCK (print-shop and Photoshop
  // exports): those come out as CMYK and become RGB below.
  const bool cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
  info.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  // Let the decoder downscale by 1/2, 1/4 or 1/8 in the DCT while the result still covers the
  // target: most of the decode time saved for large photos.
  info.scale_num = 1;
  info.scale_denom = 1;
  for (unsigned denom = 8; denom > 1; denom /= 2)
    if (static_cast<int>(info.image_height / denom) >= min_height && static_cast<int>(info.image_width / denom) >= min_width) {
      info.scale_denom = denom;
      break;
    }
  jpeg_start_decompress(&info);
  out.height = static_cast<int>(info.output_height);
  out.width = static_cast<int>(info.output_width);
  const auto row_size = static_cast<std::size_t>(out.width) * 3;
  out.pixels.resize(static_cast<std::size_t>(out.height) * row_size);
  out.cmyk_row.resize(cmyk ? static_cast<std::size_t>(out.width) * 4 : 0);
  const bool inverted = info.saw_Adobe_marker;  // Adobe's files store 255 - C, 255 - M, 255 - Y, 255 - K
  while (info.output_scanline < info.output_height) {
    JSAMPLE* rgb = out.pixels.data() + static_cast<std::size_t>(info.output_scanline) * row_size;
    JSAMPROW row = cmyk ? out.cmyk_row.data() : rgb;
    jpeg_read_scanlines(&info, &row, 1);
    if (cmyk) cmyk_to_rgb(out.cmyk_row.data(), out.width, inverted, rgb);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

bool decode_png(const unsigned char* bytes, std::size_t size, RgbImage& out, std::string& why) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes, size)) {
    why = image.message;
    return false;
  }
  // Palette, grey and 16-bit become 8-bit RGBA, whose alpha is then dropped: what Pillow's
  // convert("RGB") does (PNG_FORMAT_RGB would composite transparent pixels on black instead).
  image.format = PNG_FORMAT_RGBA;
  out.declared_width = image.width;
  out.declared_height = image.height;
  if (too_many_pixels(out)) {
    png_image_free(&image);
    return true;  // decode_image_into skips it, with the size
  }
  out.height = static_cast<int>(image.height);
  out.width = static_cast<int>(image.width);
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    why = image.message;
    png_image_free(&image);
    return false;
  }
  const std::size_t pixels = static_cast<std::size_t>(out.height) * static_cast<std::size_t>(out.width);
  for (std::size_t i = 0; i < pixels; ++i)
    for (std::size_t c = 0; c < 3; ++c) out.pixels[i * 3 + c] = out.pixels[i * 4 + c];
  out.pixels.resize(pixels * 3);
  return true;
}

}  // namespace

void decode_image_into(const unsigned char* bytes, std::size_t size, std::int64_t height, std::int64_t width, std::uint8_t* chw) {
  RgbImage image;
  static const unsigned char png_signature[] = {0x89, 'P', 'N', 'G'};
  if (size == 0) throw SkippedSample("the file is empty (0 bytes): an interrupted copy or download?");
  if (size >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    char why[JMSG_LENGTH_MAX] = {0};
    if (!decode_jpeg(bytes, size, static_cast<int>(height), static_cast<int>(width), image, why))
      throw SkippedSample(std::string("corrupt JPEG: ") + why);
  } else if (size >= 4 && std::memcmp(bytes, png_signature, 4) == 0) {
    std::string why;
    if (!decode_png(bytes, size, image, why)) throw SkippedSample("corrupt PNG: " + why);
  } else if (const auto found = stand_in(std::string_view(reinterpret_cast<const char*>(bytes), std::min(size, kStandInHeadBytes)))) {
    throw SkippedSample(found->what + ", not the image: " + found->why, found->fix);
  } else {
    throw SkippedSample("neither a JPEG nor a PNG (unknown signature)");
  }
  if (too_many_pixels(image)) {
    const auto pixels = image.declared_width * image.declared_height;
    throw SkippedSample("too large: " + std::to_string(image.declared_width) + " x " + std::to_string(image.declared_height) + " = " +
                        core::with_commas(pixels) + " pixels, more than the " + core::with_commas(kMaxPixels) +
                        " Pillow opens (its decompression-bomb limit); decoding it would take " + core::format_bytes(pixels * 4) +
                        " of RAM per loader thread: scale it down first (ImageMagick: mogrify -resize '8192x8192>' FILE)");
  }
  if (image.height == 0 || image.width == 0) throw SkippedSample("the image is empty");
  const int h = static_cast<int>(height), w = static_cast<int>(width);
  const auto [rows, columns] = cover_size(image.height, image.width, h, w);
  if (rows == image.height && columns == image.width)
    crop_centre(image, h, w, chw);
  else
    crop_centre(resize_bilinear(image, rows, columns), h, w, chw);
}

}  // namespace gputrain::data
