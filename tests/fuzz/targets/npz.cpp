// .npz archives: the zip directory, stored and deflated members, their CRC-32s, the .npy inside.
#include "fuzz_input.hpp"
#include "gputrain/data/numpy_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = gputrain::fuzz::write_input("input.npz", data, size);
  gputrain::fuzz::expect_read_or_refusal("read_npz", [&] { (void)gputrain::data::read_npz(path); });
  return 0;
}
