// Images decoded, resized and cropped as Pillow does it (tests/data/formats/make_fixtures.py), and the
// images Pillow refuses (cut short, or of more pixels than it opens) skipped as it skips them.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/image_decode.hpp"
#include "gputrain/data/batch.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/sample_stats.hpp"
#include "gputrain/data/sources.hpp"
#include "support/damaged_copies.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
using namespace gputrain::data;
using test_support::format_fixture;

TEST(Images, DecodeLikePillow) {
  for (const std::string name : {"rgb.png", "grey.png", "rgba.png", "palette.png", "rgb.jpg", "grey.jpg", "cmyk.jpg"}) {
    const auto expected = read_npy(format_fixture("images/exact/" + name + ".npy"));
    // A one-file folder per image: the source under test is the image folder itself.
    const auto root = std::filesystem::temp_directory_path() / ("gputrain-decode-" + name);
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root / "only");
    std::filesystem::copy_file(format_fixture("images/exact/" + name), root / "only" / name);
    SourceSpec spec;
    spec.source = "image_folder";
    spec.path = root.string();
    spec.image_size = {16, 24};  // the images' own size: no resampling
    const auto sources = open_sources(spec);
    const auto got = materialize(*sources.train, 1).set.inputs[0];
    const auto diff = (got.to(at::kInt) - expected.to(at::kInt)).abs().max().item<int>();
    // PNG is lossless; for JPEG both sides use libjpeg-turbo, so at most rounding differs.
    EXPECT_LE(diff, name.find(".png") != std::string::npos ? 0 : 2) << name;
  }
}

// Resized and cropped as Pillow does it (docs/data.md, "Images"): the fixtures' expected samples
// are docs/examples/predict.py's, so what Python users are told is what gputrain does. PNG exactly;
// JPEG within the levels two libjpeg-turbo builds decode apart.
TEST(Images, ResizeAndCropLikePillow) {
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(format_fixture("images/resize"))) {
    const auto expected_file = entry.path().filename().string();
    if (entry.path().extension() != ".npy") continue;
    const auto image = expected_file.substr(0, expected_file.find('.', expected_file.find('.') + 1));   // down.png
    const auto size = expected_file.substr(image.size() + 1, expected_file.size() - image.size() - 5);  // 24x20
    const std::int64_t height = std::stoll(size.substr(0, size.find('x'))), width = std::stoll(size.substr(size.find('x') + 1));
    const auto bytes = test_support::file_bytes(format_fixture("images/resize/" + image));
    std::vector<std::uint8_t> chw(static_cast<std::size_t>(3 * height * width));
    decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), height, width, chw.data());
    const auto got = at::from_blob(chw.data(), {3, height, width}, at::kByte).to(at::kInt);
    const auto expected = read_npy(entry.path().string()).to(at::kInt);
    ASSERT_EQ(expected.sizes(), got.sizes()) << expected_file;
    const auto diff = (got - expected).abs();
    if (image.find(".png") != std::string::npos) {
      EXPECT_EQ(diff.max().item<int>(), 0) << expected_file << ": " << diff.gt(0).sum().item<int>() << " bytes differ";
    } else {
      EXPECT_LE(diff.max().item<int>(), 3) << expected_file;
      EXPECT_LT(diff.to(at::kFloat).mean().item<float>(), 0.5f) << expected_file;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 7U);
}

// A JPEG cut short (an interrupted download or copy) is skipped, as Pillow refuses it; libjpeg
// alone would fill the missing rows grey, and the run would train on them.
TEST(Images, ATruncatedJpegIsSkippedAsPillowRefusesIt) {
  const auto bytes = test_support::file_bytes(format_fixture("bad/truncated.jpg"));
  std::vector<std::uint8_t> chw(3 * 16 * 16);
  try {
    decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 16, 16, chw.data());
    ADD_FAILURE() << "the truncated JPEG was decoded";
  } catch (const SkippedSample& e) {
    EXPECT_NE(std::string(e.what()).find("Premature end of JPEG file"), std::string::npos) << e.what();
  }
}

// Images whose header promises more pixels than Pillow opens (a 1 MB PNG of zeros can say 32000 x
// 32000: 4 GB and seconds to decode, per loader thread) are skipped before a pixel is decoded, with
// the size and the fix. One pixel within the bound is decoded as usual (here: found corrupt).
namespace {

std::string skip_reason(const std::string& bytes) {
  std::vector<std::uint8_t> chw(3 * 16 * 16);
  try {
    decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 16, 16, chw.data());
  } catch (const SkippedSample& e) {
    return e.what();
  }
  return "decoded";
}

void put_big_endian(std::string& bytes, std::size_t at, std::uint32_t value, int size) {
  for (int i = 0; i < size; ++i) bytes[at + i] = static_cast<char>((value >> (8 * (size - 1 - i))) & 0xff);
}

// A chunk with its length and the CRC-32 libpng checks.
std::string png_chunk(const std::string& type_and_data) {
  std::string chunk(8, '\0');
  put_big_endian(chunk, 0, static_cast<std::uint32_t>(type_and_data.size() - 4), 4);
  chunk.replace(4, 4, type_and_data);
  chunk.resize(4 + type_and_data.size() + 4);
  put_big_endian(chunk, chunk.size() - 4,
                 static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(type_and_data.data()), type_and_data.size())), 4);
  return chunk;
}

// A PNG whose header says width x height, with an empty image data chunk.
std::string png_header(std::uint32_t width, std::uint32_t height) {
  std::string ihdr = "IHDR" + std::string(13, '\0');
  put_big_endian(ihdr, 4, width, 4);
  put_big_endian(ihdr, 8, height, 4);
  ihdr[12] = 8;  // 8-bit grey
  return "\x89PNG\r\n\x1a\n" + png_chunk(ihdr) + png_chunk("IDAT") + png_chunk("IEND");
}

// The fixture's JPEG with its frame header's size changed.
std::string jpeg_declaring(std::uint16_t width, std::uint16_t height) {
  auto bytes = test_support::file_bytes(format_fixture("images/exact/rgb.jpg"));
  const auto frame = bytes.find("\xff\xc0");  // SOF0: length, precision, height, width
  EXPECT_NE(frame, std::string::npos);
  put_big_endian(bytes, frame + 5, height, 2);
  put_big_endian(bytes, frame + 7, width, 2);
  return bytes;
}

}  // namespace

TEST(Images, AHeaderOfMorePixelsThanPillowOpensIsSkippedBeforeDecoding) {
  const auto png = skip_reason(png_header(32000, 32000));
  EXPECT_NE(png.find("too large: 32000 x 32000 = 1,024,000,000 pixels, more than the 178,956,970 Pillow opens (its "
                     "decompression-bomb limit); decoding it would take 3.81 GiB of RAM per loader thread: scale it down first "
                     "(ImageMagick: mogrify -resize '8192x8192>' FILE)"),
            std::string::npos)
      << png;
  EXPECT_NE(skip_reason(jpeg_declaring(13378, 13377)).find("too large: 13378 x 13377 = 178,957,506 pixels"), std::string::npos);
  // Within the bound (13377 x 13377 = 178,944,129) the decoders run: the PNG's data is found short.
  EXPECT_EQ(skip_reason(png_header(13377, 13377)).rfind("corrupt PNG", 0), 0U) << skip_reason(png_header(13377, 13377));
  EXPECT_EQ(skip_reason(jpeg_declaring(13377, 13377)).find("too large"), std::string::npos);
}

// data.standardize on an image folder: the images as the cache decodes them, all or a seeded choice.
TEST(SampleStats, AnImageFolderIsMeasuredAsItsDecodedImages) {
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = format_fixture("folder/train");
  spec.image_size = {12, 10};
  const auto train = open_sources(spec).train;
  const auto all = measure_sample_stats(train, 10000, 2, 7);
  const auto decoded = materialize(*train, 2).set.inputs;
  const auto expected = measure_channel_stats(decoded);
  EXPECT_EQ(all.measured, 6);
  EXPECT_EQ(all.skipped, 2);  // broken.jpg and empty.png
  EXPECT_EQ(all.stats.mean, expected.mean);
  EXPECT_EQ(all.stats.std, expected.std);
  EXPECT_GT(all.stats.mean[0], all.stats.mean[1]);  // red cats outweigh blue dogs in red

  const auto some = measure_sample_stats(train, 4, 2, 7);
  EXPECT_EQ(some.measured + some.skipped, 4);
  const auto again = measure_sample_stats(train, 4, 1, 7);
  EXPECT_EQ(again.stats.mean, some.stats.mean);  // the choice is the seed's, not the threads'
}

// A large downscale averages instead of skipping pixels: a fine checkerboard becomes flat grey,
// where point sampling would keep whole black or white rows.
TEST(Images, LargeDownscalesAverage) {
  const auto root = std::filesystem::temp_directory_path() / "gputrain-downscale";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "only");
  std::filesystem::copy_file(format_fixture("images/checker.png"), root / "only" / "checker.png");
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = root.string();
  spec.image_size = {10, 10};  // from 256 x 256: bilinear alone would weigh neighbours 0.7/0.3
  const auto pixels = materialize(*open_sources(spec).train, 1).set.inputs.to(at::kFloat);
  EXPECT_NEAR(pixels.mean().item<float>(), 127.5f, 2.0f);
  EXPECT_LT((pixels - 127.5).abs().max().item<float>(), 20.0f);
}
