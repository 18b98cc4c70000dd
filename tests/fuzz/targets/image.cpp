// The JPEG and PNG decode path of image folders: libjpeg-turbo or libpng, the DCT scaling, the
// resize to cover 24 x 32 and the centre crop. Nothing is written past the 3 x 24 x 32 bytes.
#include <vector>

#include "data/image_decode.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::int64_t height = 24, width = 32;
  std::vector<std::uint8_t> chw(3 * height * width);  // exact: ASan sees any write past it
  gputrain::fuzz::expect_read_or_refusal("decode_image_into",
                                         [&] { gputrain::data::decode_image_into(data, size, height, width, chw.data()); });
  return 0;
}
