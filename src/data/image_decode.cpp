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

#include "gputrain/data/dataset.hpp"

namespace gputrain::data {
namespace {

struct RgbImage {
  std::vector<std::uint8_t> pixels;  // HWC
  int height = 0, width = 0;
  std::vector<std::uint8_t> cmyk_row;  // decode_jpeg's scratch, here because no destructor may live across its setjmp
};

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
  image.format = PNG_FORMAT_RGB;  // palette, grey, 16-bit and alpha (composited on black) become 8-bit RGB
  out.height = static_cast<int>(image.height);
  out.width = static_cast<int>(image.width);
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    why = image.message;
    png_image_free(&image);
    return false;
  }
  return true;
}

// Averages f x f blocks: bilinear sampling alone would skip most pixels of a large downscale and
// alias; this brings the image to within 2x of the target first (edge pixels past the last whole
// block are dropped: at most f - 1 of thousands).
RgbImage box_downsample(const RgbImage& image, int f) {
  RgbImage out;
  out.height = image.height / f;
  out.width = image.width / f;
  out.pixels.resize(static_cast<std::size_t>(out.height) * static_cast<std::size_t>(out.width) * 3);
  std::vector<unsigned> row(static_cast<std::size_t>(out.width) * 3);
  for (int oy = 0; oy < out.height; ++oy) {
    std::fill(row.begin(), row.end(), 0U);
    for (int dy = 0; dy < f; ++dy) {
      const std::uint8_t* in = image.pixels.data() + static_cast<std::size_t>(oy * f + dy) * static_cast<std::size_t>(image.width) * 3;
      for (int ox = 0; ox < out.width; ++ox)
        for (int dx = 0; dx < f; ++dx)
          for (int c = 0; c < 3; ++c) row[static_cast<std::size_t>(ox * 3 + c)] += in[(ox * f + dx) * 3 + c];
    }
    const unsigned area = static_cast<unsigned>(f * f);
    for (std::size_t i = 0; i < row.size(); ++i)
      out.pixels[static_cast<std::size_t>(oy) * row.size() + i] = static_cast<std::uint8_t>((row[i] + area / 2) / area);
  }
  return out;
}

// Bilinear scale to cover height x width, centre crop, HWC -> CHW.
void resize_crop(const RgbImage& image, std::int64_t height, std::int64_t width, std::uint8_t* chw) {
  const double scale = std::max(static_cast<double>(height) / image.height, static_cast<double>(width) / image.width);
  const double off_y = (image.height * scale - static_cast<double>(height)) / 2,
               off_x = (image.width * scale - static_cast<double>(width)) / 2;
  const std::size_t plane = static_cast<std::size_t>(height * width);
  std::vector<int> x0(static_cast<std::size_t>(width)), x1(static_cast<std::size_t>(width));
  std::vector<float> fx(static_cast<std::size_t>(width));
  for (std::int64_t x = 0; x < width; ++x) {
    const double source = std::clamp((static_cast<double>(x) + off_x + 0.5) / scale - 0.5, 0.0, image.width - 1.0);
    x0[static_cast<std::size_t>(x)] = static_cast<int>(source);
    x1[static_cast<std::size_t>(x)] = std::min(x0[static_cast<std::size_t>(x)] + 1, image.width - 1);
    fx[static_cast<std::size_t>(x)] = static_cast<float>(source - x0[static_cast<std::size_t>(x)]);
  }
  for (std::int64_t y = 0; y < height; ++y) {
    const double source = std::clamp((static_cast<double>(y) + off_y + 0.5) / scale - 0.5, 0.0, image.height - 1.0);
    const int y0 = static_cast<int>(source), y1 = std::min(y0 + 1, image.height - 1);
    const float fy = static_cast<float>(source - y0);
    const std::uint8_t* r0 = image.pixels.data() + static_cast<std::size_t>(y0) * static_cast<std::size_t>(image.width) * 3;
    const std::uint8_t* r1 = image.pixels.data() + static_cast<std::size_t>(y1) * static_cast<std::size_t>(image.width) * 3;
    for (std::int64_t x = 0; x < width; ++x) {
      const auto i = static_cast<std::size_t>(x);
      for (int c = 0; c < 3; ++c) {
        const float top = r0[x0[i] * 3 + c] + (r0[x1[i] * 3 + c] - r0[x0[i] * 3 + c]) * fx[i];
        const float bottom = r1[x0[i] * 3 + c] + (r1[x1[i] * 3 + c] - r1[x0[i] * 3 + c]) * fx[i];
        chw[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(y * width + x)] =
            static_cast<std::uint8_t>(std::clamp(top + (bottom - top) * fy + 0.5f, 0.0f, 255.0f));
      }
    }
  }
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
  } else {
    throw SkippedSample("neither a JPEG nor a PNG (unknown signature)");
  }
  if (image.height == 0 || image.width == 0) throw SkippedSample("the image is empty");
  const double shrink = std::min(static_cast<double>(image.height) / static_cast<double>(height),
                                 static_cast<double>(image.width) / static_cast<double>(width));
  if (shrink >= 4) {
    resize_crop(box_downsample(image, static_cast<int>(shrink / 2)), height, width, chw);
    return;
  }
  resize_crop(image, height, width, chw);
}

}  // namespace gputrain::data
