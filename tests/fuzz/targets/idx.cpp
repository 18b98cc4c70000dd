// MNIST's IDX files, plain or gzip'd (told apart by gzip's magic bytes, as the reader does).
#include "fuzz_input.hpp"
#include "gputrain/data/idx_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool gzipped = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const std::string path = gputrain::fuzz::write_input(gzipped ? "input-idx3-ubyte.gz" : "input-idx3-ubyte", data, size);
  gputrain::fuzz::expect_read_or_refusal("read_idx", [&] { (void)gputrain::data::read_idx(path); });
  return 0;
}
